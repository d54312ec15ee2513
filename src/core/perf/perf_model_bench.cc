// Cost of one latency evaluation, the simulator's per-batch call (target ~100 ns).
#include <benchmark/benchmark.h>

#include "core/perf/perf_model.h"
#include "core/perf/table_latency_model.h"

namespace sluice::core {
namespace {

void BM_AnalyticBatchLatency(benchmark::State& state) {
  auto pm = PerfModel::BuiltIn();
  const LatencyModel& m = *(*pm->Find("resnet152"))->latency;
  const double quota = state.range(0) / 100.0;
  int b = 1;
  double s = 0.1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.BatchLatency(b, s, quota));
    b = b % 32 + 1;
    s = s >= 0.95 ? 0.1 : s + 0.05;
  }
}
BENCHMARK(BM_AnalyticBatchLatency)->Arg(100)->Arg(50);

void BM_TableBatchLatency(benchmark::State& state) {
  std::vector<ProfilePoint> pts;
  for (int b : {1, 2, 4, 8, 16, 32}) {
    for (int s = 10; s <= 100; s += 10) {
      for (int q = 10; q <= 100; q += 10)
        pts.push_back({"m", b, s / 100.0, q / 100.0, 0.01 * b});
    }
  }
  auto m = *TableLatencyModel::Create(pts);
  int b = 1;
  double s = 0.1, q = 0.15;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m->BatchLatency(b, s, q));
    b = b % 32 + 1;
    s = s >= 0.95 ? 0.1 : s + 0.05;
    q = q >= 0.95 ? 0.15 : q + 0.1;
  }
}
BENCHMARK(BM_TableBatchLatency);

void BM_InterferenceSlowdown(benchmark::State& state) {
  auto pm = PerfModel::BuiltIn();
  double c = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(pm->InterferenceSlowdown(c));
    c = c >= 1 ? 0 : c + 0.1;
  }
}
BENCHMARK(BM_InterferenceSlowdown);

}  // namespace
}  // namespace sluice::core
