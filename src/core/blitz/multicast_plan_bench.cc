// PlanMulticast cost: 64 single-GPU targets from 32 sources (GPU instances and host copies) on a
// 16-node cluster of each Table 1 kind. The planner runs online at every scale-out, so it must
// cost far less than the first layer's load time (milliseconds).
#include <random>

#include "benchmark/benchmark.h"

#include "core/blitz/layered_multicast.h"
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

namespace sluice::core::blitz {
namespace {

// A whole scale-out executed layer by layer: 64 single-GPU Llama2-7B instances (32 layers of
// 13.5 GB / 32) on 64 nodes of a 125-node (1,000-GPU) cluster A, from 8 serving instances and 4
// host copies; plan, hop tree, and every layer flow to the last arrival on the FlowNetwork.
void BM_LayeredScaleOut64(benchmark::State& state) {
  const net::Topology topo = *net::Topology::Build(*net::NetPreset("blitzscale-a", 125));
  std::vector<Endpoint> sources, targets;
  for (int i = 0; i < 12; ++i) {
    Endpoint e;
    e.node = 100 + i;
    if (i < 8) {
      e.gpus = {0};
    } else {
      e.kind = Endpoint::Kind::kHost;
    }
    sources.push_back(e);
  }
  for (int i = 0; i < 64; ++i) {
    Endpoint e;
    e.node = i;
    e.gpus = {1};
    targets.push_back(e);
  }
  const std::vector<int64_t> layers(32, static_cast<int64_t>(13.5e9 / 32));
  int64_t flows = 0;
  for (auto _ : state) {
    auto plan = PlanMulticast(sources, targets, topo);
    PlanHops hops = HopsOfPlan(*plan, sources, targets, topo);
    net::FlowNetwork network(topo.Capacities(), absl::UnixEpoch());
    auto m = LayeredMulticast::Create(hops.hops, layers, 1);
    m->Start(network, absl::UnixEpoch());
    while (network.num_active() > 0) {
      const absl::Time t = network.NextCompletion();
      for (net::FlowId id : network.AdvanceTo(t)) {
        m->OnFlowDone(network, id, t);
        ++flows;
      }
    }
    benchmark::DoNotOptimize(m->done());
  }
  state.counters["flows_per_scale_out"] =
      static_cast<double>(flows) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_LayeredScaleOut64)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::core::blitz
