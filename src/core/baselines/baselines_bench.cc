// Placement cost of the static baselines (docs/PERFORMANCE.md): placing a whole instance stream
// (Place + ClusterState::Add + OnAdded per instance) onto a fresh cluster, and steady churn.
// Stream: 70 % small inference (share 0.1-0.5, 1-8 GiB), 20 % LLM (share 0.3-0.8, 14-30 GiB),
// 10 % two- to four-GPU same-node training (share 0.5-1, 4-16 GiB), fixed seed.
// Run: BUILD_DIR=build-bench CMAKE_ARGS="-DSLUICE_BUILD_BENCH=ON" scripts/build --target
//      baselines_bench && build-bench/src/core/baselines/baselines_bench
#include <memory>
#include <random>

#include "benchmark/benchmark.h"

#include "core/baselines/exclusive_placement.h"
#include "core/baselines/static_share_placement.h"
#include "core/baselines/testing/commit.h"

namespace sluice::core {
namespace {

std::vector<InstanceDemand> Stream(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<InstanceDemand> out(n);
  for (int i = 0; i < n; ++i) {
    InstanceDemand& d = out[i];
    d.instance = InstanceId(i);
    d.function = FunctionId(i % 500);
    const double kind = u(rng);
    double share;
    if (kind < 0.7) {
      share = 0.1 + 0.4 * u(rng);
      d.memory_per_gpu = Bytes::GiB(1 + 7 * u(rng));
    } else if (kind < 0.9) {
      share = 0.3 + 0.5 * u(rng);
      d.memory_per_gpu = Bytes::GiB(14 + 16 * u(rng));
    } else {
      share = 0.5 + 0.5 * u(rng);
      d.memory_per_gpu = Bytes::GiB(4 + 12 * u(rng));
      d.gpus = 2 + static_cast<int>(rng() % 3);
      d.same_node = true;
    }
    share = std::round(share * 100) / 100;  // profiled SM rates come in percent
    d.quota = {share, share};
  }
  return out;
}

std::unique_ptr<PlacementPolicy> MakePolicy(int which) {
  if (which == 0)
    return std::make_unique<ExclusivePlacement>();
  return std::make_unique<StaticSharePlacement>(StaticSharePlacement::Options{});
}

// Args: policy (0 exclusive, 1 static share), instances, nodes (x 4 GPUs).
void BM_PlaceStream(benchmark::State& st) {
  const std::vector<InstanceDemand> demands = Stream(static_cast<int>(st.range(1)), 42);
  const ClusterSpec spec = ClusterSpec::Uniform(static_cast<int>(st.range(2)), NodeSpec{});
  int64_t placed = 0, gpus = 0;
  for (auto _ : st) {
    st.PauseTiming();
    auto state = std::make_unique<ClusterState>(spec);
    auto policy = MakePolicy(static_cast<int>(st.range(0)));
    (void)policy->Place(demands[0], *state);  // builds the index outside the timed region
    st.ResumeTiming();
    placed = 0;
    for (const InstanceDemand& d : demands)
      placed += PlaceAndCommit(*policy, *state, d).ok();
    st.PauseTiming();
    gpus = static_cast<int64_t>(state->active_gpus().size());
    state.reset();
    st.ResumeTiming();
  }
  st.counters["placed"] = static_cast<double>(placed);
  st.counters["active_gpus"] = static_cast<double>(gpus);
  st.counters["per_instance"] = benchmark::Counter(
      static_cast<double>(st.range(1)),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PlaceStream)
    ->ArgNames({"policy", "instances", "nodes"})
    ->Args({0, 3200, 1000})
    ->Args({1, 3200, 1000})
    ->Args({0, 100000, 30000})
    ->Args({1, 100000, 30000})
    ->Unit(benchmark::kMillisecond);

// Steady churn: 3,200 live instances on 1,000 x 4 GPUs; each iteration removes one and places one.
void BM_Churn(benchmark::State& st) {
  const ClusterSpec spec = ClusterSpec::Uniform(1000, NodeSpec{});
  const std::vector<InstanceDemand> demands = Stream(200000, 7);
  ClusterState state(spec);
  auto policy = MakePolicy(static_cast<int>(st.range(0)));
  std::vector<InstanceId> live;
  size_t next = 0;
  for (; live.size() < 3200 && next < demands.size(); ++next) {
    if (PlaceAndCommit(*policy, state, demands[next]).ok())
      live.push_back(demands[next].instance);
  }
  std::mt19937 rng(1);
  for (auto _ : st) {
    const size_t i = rng() % live.size();
    RemoveAndNotify(*policy, state, live[i]);
    InstanceDemand d = demands[next % demands.size()];
    d.instance = InstanceId(static_cast<int64_t>(demands.size() + next++));
    if (PlaceAndCommit(*policy, state, d).ok()) {
      live[i] = d.instance;
    } else {
      live[i] = live.back();
      live.pop_back();
    }
  }
  st.counters["live"] = static_cast<double>(live.size());
}
BENCHMARK(BM_Churn)->ArgNames({"policy"})->Arg(0)->Arg(1);

}  // namespace
}  // namespace sluice::core
