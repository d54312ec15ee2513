// PlanMulticast cost: 64 single-GPU targets from 32 sources (GPU instances and host copies) on a
// 16-node cluster of each Table 1 kind. The planner runs online at every scale-out, so it must
// cost far less than the first layer's load time (milliseconds).
#include <random>

#include "benchmark/benchmark.h"

#include "core/blitz/multicast_plan.h"

namespace sluice::core::blitz {
namespace {

void Plan64From32(benchmark::State& state, const char* preset) {
  const net::Topology topo = *net::Topology::Build(*net::NetPreset(preset, 16));
  std::vector<Endpoint> sources, targets;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 32; ++i) {  // GPUs 0-1 of each node serve; every 4th is a host copy
    Endpoint e;
    e.node = i / 2;
    if (i % 4 == 3) {
      e.kind = Endpoint::Kind::kHost;
    } else {
      e.gpus = {i % 2};
    }
    e.outcast_busy = rng() % 3 == 0;
    sources.push_back(e);
  }
  for (int i = 0; i < 64; ++i) {  // GPUs 2-5 of each node scale out
    Endpoint e;
    e.node = i / 4;
    e.gpus = {2 + i % 4};
    targets.push_back(e);
  }
  for (auto _ : state) {
    auto plan = PlanMulticast(sources, targets, topo);
    benchmark::DoNotOptimize(plan);
  }
}

void BM_Plan64From32ClusterA(benchmark::State& state) {
  Plan64From32(state, "blitzscale-a");
}
void BM_Plan64From32ClusterB(benchmark::State& state) {
  Plan64From32(state, "blitzscale-b");
}
BENCHMARK(BM_Plan64From32ClusterA)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Plan64From32ClusterB)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice::core::blitz
