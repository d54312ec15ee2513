// Arrival-generation cost per source kind (arrivals/s), so the engine's event budget can account
// for it. Run: build-*/src/sim/workload/sim_workload_bench
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"

#include "sim/workload/arrivals.h"
#include "sim/workload/longtail.h"
#include "sim/workload/sources.h"

namespace sluice::sim {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(0);

void DrainAll(ArrivalSource& source, int64_t& n) {
  while (std::optional<Arrival> a = source.Next()) {
    benchmark::DoNotOptimize(a->at);
    ++n;
  }
}

void BM_Renewal(benchmark::State& state, RenewalKind kind, double cv) {
  int64_t n = 0;
  for (auto _ : state) {
    auto source = MakeRenewalSource(kind, 1000, cv, 1,
                                    ReplayWindow{.start = kStart, .horizon = absl::Seconds(1000)});
    DrainAll(*source, n);
  }
  state.SetItemsProcessed(n);
}
BENCHMARK_CAPTURE(BM_Renewal, poisson, RenewalKind::kExponential, 1.0);
BENCHMARK_CAPTURE(BM_Renewal, gamma_cv1, RenewalKind::kGamma, 1.0);
BENCHMARK_CAPTURE(BM_Renewal, gamma_cv4, RenewalKind::kGamma, 4.0);

void BM_Bucket(benchmark::State& state, ArrivalSpread spread) {
  std::vector<double> values(1000);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = 500 + 400 * std::sin(i / 50.0);
  int64_t n = 0;
  for (auto _ : state) {
    auto source =
        MakeBucketSource(values, 2, absl::Seconds(1), spread, 1, ReplayWindow{.start = kStart});
    DrainAll(*source, n);
  }
  state.SetItemsProcessed(n);
}
BENCHMARK_CAPTURE(BM_Bucket, even, ArrivalSpread::kEven);
BENCHMARK_CAPTURE(BM_Bucket, uniform, ArrivalSpread::kUniform);
BENCHMARK_CAPTURE(BM_Bucket, poisson, ArrivalSpread::kPoisson);

void BM_ParseRequestTrace(benchmark::State& state) {
  std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < 100000; ++i) {
    absl::StrAppend(&csv, "2023-11-16 18:", 10 + i / 6000 % 50, ":", 10 + i / 100 % 50, ".",
                    1000000 + i, ",", 100 + i % 4000, ",", i % 300, "\n");
  }
  int64_t rows = 0;
  for (auto _ : state) {
    auto parsed = ParseRequestTrace(
        csv, "bench.csv", {.prompt_tokens = "ContextTokens", .output_tokens = "GeneratedTokens"});
    if (!parsed.ok())
      state.SkipWithError(std::string(parsed.status().message()).c_str());
    rows += parsed.ok() ? static_cast<int64_t>(parsed->size()) : 0;
  }
  state.SetItemsProcessed(rows);
}
BENCHMARK(BM_ParseRequestTrace);

// A long-tail fleet (longtail.h) of state.range(0) functions over state.range(1) hours: the
// fleet draw, then every function's source drained in turn (one live source at a time, as the
// engine holds one per function; arrivals are never stored). Items = arrivals.
void BM_LongTailFleet(benchmark::State& state) {
  const int count = static_cast<int>(state.range(0));
  const absl::Duration horizon = absl::Hours(state.range(1));
  int64_t n = 0;
  for (auto _ : state) {
    auto fleet = GenerateLongTailFleet(count, 1, LongTailFleetOptions{});
    if (!fleet.ok()) {
      state.SkipWithError(std::string(fleet.status().message()).c_str());
      break;
    }
    for (int i = 0; i < count; ++i) {
      auto source = MakeLongTailSource((*fleet)[i], DeriveSeed(1, i),
                                       ReplayWindow{.start = kStart, .horizon = horizon});
      DrainAll(*source, n);
    }
  }
  state.SetItemsProcessed(n);
  state.counters["arrivals"] = static_cast<double>(n) / state.iterations();
}
BENCHMARK(BM_LongTailFleet)->Args({500, 8})->Args({5000, 8})->Args({50000, 8})
    ->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace sluice::sim
