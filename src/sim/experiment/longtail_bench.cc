// Long-tail experiment speed (issue 13, item 5; docs/PERFORMANCE.md records the numbers and this
// command). Runs one experiment file once per selected policy, as `sluice sim run` does, and
// reports engine events per wall-second, simulated seconds per wall-second and the wall time:
//   scripts/build sim_longtail_bench
//   SLUICE_BENCH_EXPERIMENT=experiments/longtail-50000.yaml SLUICE_BENCH_POLICY=sluice
//     [SLUICE_BENCH_OUT=DIR] build/src/sim/experiment/sim_longtail_bench   (one command line)
// SLUICE_BENCH_POLICY: comma-separated labels (all when unset); SLUICE_BENCH_OUT writes
// summary.json / summary.csv / timelines there. The table goes to stderr. Without
// SLUICE_BENCH_EXPERIMENT the benchmark reports an error and runs nothing. Like `sluice sim run`,
// it re-executes itself with glibc's huge-page tunable first (common/huge_pages.h;
// SLUICE_HUGE_PAGES=0 keeps small pages).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"

#include "common/huge_pages.h"
#include "core/perf/perf_model.h"
#include "sim/experiment/experiment_loader.h"
#include "sim/experiment/experiment_runner.h"
#include "sim/experiment/report.h"

namespace sluice::sim {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

void BM_LongTailExperiment(benchmark::State& state) {
  const std::string path = Env("SLUICE_BENCH_EXPERIMENT");
  if (path.empty()) {
    state.SkipWithError("set SLUICE_BENCH_EXPERIMENT");
    return;
  }
  const std::unique_ptr<core::PerfModel> perf = core::PerfModel::BuiltIn();
  absl::StatusOr<LoadedExperiment> loaded = LoadExperimentWithProfiles(path, *perf);
  if (!loaded.ok()) {
    state.SkipWithError(std::string(loaded.status().message()).c_str());
    return;
  }
  SimConfig& config = loaded->config;
  std::vector<std::string> policies;
  if (const std::string p = Env("SLUICE_BENCH_POLICY"); !p.empty())
    policies = absl::StrSplit(p, ',');
  if (absl::Status s = SelectPolicies(policies, config); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  double events = 0, wall_s = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<ExperimentOutput> out = RunExperiment(config, *perf, path, false);
    wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    events = 0;
    for (const RunResult& r : out->runs) events += static_cast<double>(r.events);
    std::cerr << SummaryTable(config, out->runs, loaded->profiles);
    if (const std::string dir = Env("SLUICE_BENCH_OUT"); !dir.empty()) {
      if (absl::Status s = WriteOutputDir(dir, config, out->runs, loaded->profiles); !s.ok())
        state.SkipWithError(std::string(s.message()).c_str());
    }
  }
  const double sim_s = absl::ToDoubleSeconds(config.horizon) *
                       static_cast<double>(config.policies.size() *
                                           std::max<size_t>(1, config.workloads.size()));
  state.counters["functions"] = static_cast<double>(config.functions.size());
  state.counters["events"] = events;
  state.counters["wall_s"] = wall_s;
  state.counters["events_per_wall_s"] = wall_s > 0 ? events / wall_s : 0;
  state.counters["sim_s_per_wall_s"] = wall_s > 0 ? sim_s / wall_s : 0;
}
BENCHMARK(BM_LongTailExperiment)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
}  // namespace sluice::sim

int main(int argc, char** argv) {
  sluice::common::ReexecWithHugePages(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
