// Decision cost of HAS-GPU's hybrid autoscaler at 10,000 functions (docs/PERFORMANCE.md): a
// cluster of 10,000 GPUs (1,250 nodes x 8) holding 1-3 pods of each function, placed by
// HasGpuPlacement (s 0.1-0.5, q 0.2-1.0, 2 GiB); each function's load is drawn so that about a
// third scale up, a third down and a third hold (fixed seed). One iteration = Observe + Decide
// for every function (decisions are not committed, so each iteration repeats the same work;
// cool-down 0 so scale-downs are computed every time). LinearLatency (testing/) stands for the
// latency model: the figure is the policy's cost, not the predictor's.
// Run: BUILD_DIR=build CMAKE_ARGS="-DSLUICE_BUILD_BENCH=ON" scripts/build hasgpu_bench &&
//      build/src/core/hasgpu/hasgpu_bench
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "core/hasgpu/hasgpu_placement.h"
#include "core/hasgpu/hybrid_autoscaler.h"
#include "core/hasgpu/testing/linear_latency.h"

namespace sluice::core {
namespace {

struct Fleet {
  LinearLatency latency;
  std::unique_ptr<ClusterState> state;
  std::vector<std::unique_ptr<HybridAutoscaler>> scalers;
  std::vector<std::vector<PodView>> pods;
  std::vector<double> rps;
};

std::unique_ptr<Fleet> Build(int functions) {
  auto fleet = std::make_unique<Fleet>();
  NodeSpec node;
  node.gpu_count = 8;
  fleet->state = std::make_unique<ClusterState>(ClusterSpec::Uniform(functions / 8, node));
  HasGpuPlacement placement({"has-gpu", 2, HeldOrder::kLeastHeld});
  std::mt19937 rng(42);
  HybridAutoscalerConfig cfg;
  cfg.cooldown = absl::ZeroDuration();
  int next = 0;
  for (int f = 0; f < functions; ++f) {
    HasGpuFunction fn;
    fn.latency = &fleet->latency;
    fn.max_batch = 8;
    fn.memory = Bytes::GiB(2);
    fleet->scalers.push_back(std::move(*HybridAutoscaler::Create(cfg, fn)));
    std::vector<PodView> pods;
    double capacity = 0;
    const double s = 0.1 * (1 + rng() % 5);
    for (int p = 0, n = 1 + static_cast<int>(rng() % 3); p < n; ++p) {
      InstanceDemand d;
      d.function = FunctionId(f);
      d.instance = InstanceId(next++);
      d.memory_per_gpu = fn.memory;
      d.quota = {s, s, 0.2 * (1 + rng() % 5)};
      absl::StatusOr<std::vector<GpuId>> g = placement.Place(d, *fleet->state);
      if (!g.ok() || !fleet->state->Add({d.instance, d.function, (*g)[0], fn.memory, d.quota}).ok())
        continue;
      pods.push_back({d.instance, (*g)[0], d.quota, 8, true});
      capacity += 100 * s * d.quota.time_quota;
    }
    const int mode = static_cast<int>(rng() % 3);  // up, down, hold
    fleet->rps.push_back(capacity * (mode == 0 ? 1.5 : mode == 1 ? 0.2 : 0.65));
    fleet->pods.push_back(std::move(pods));
  }
  return fleet;
}

void BM_HybridDecideAllFunctions(benchmark::State& st) {
  const int functions = static_cast<int>(st.range(0));
  std::unique_ptr<Fleet> fleet = Build(functions);
  absl::Time now = absl::UnixEpoch();
  int64_t actions = 0;
  for (auto _ : st) {
    now += absl::Seconds(1);
    for (int f = 0; f < functions; ++f) {
      fleet->scalers[f]->Observe({now, fleet->rps[f], 0, 0, 0});
      actions += static_cast<int64_t>(
          fleet->scalers[f]->Decide(now, fleet->pods[f], *fleet->state).size());
    }
  }
  st.counters["functions"] = functions;
  st.counters["active_gpus"] = static_cast<double>(fleet->state->active_gpus().size());
  st.counters["actions_per_pass"] =
      benchmark::Counter(static_cast<double>(actions), benchmark::Counter::kAvgIterations);
  st.counters["ns_per_function"] = benchmark::Counter(
      static_cast<double>(functions), benchmark::Counter::kIsIterationInvariantRate |
                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_HybridDecideAllFunctions)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::core

BENCHMARK_MAIN();
