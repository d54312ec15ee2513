// FlowNetwork cost of one flow start plus one completion with N flows active, on BlitzScale's
// cluster A scaled to 125 nodes (1,000 GPUs): random cross-node GPU-GPU transfers (KV-cache and
// parameter traffic) and host-GPU loads. Target (issue 10): thousands of starts and completions
// per simulated second at 1,000 GPUs, so a start+complete should cost microseconds.
#include <random>

#include "benchmark/benchmark.h"

#include "core/net/flow_network.h"
#include "core/net/topology.h"

namespace sluice::core::net {
namespace {

Path RandomPath(const Topology& topo, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> node(0, topo.num_nodes() - 1);
  std::uniform_int_distribution<int> gpu(0, topo.gpus_per_node() - 1);
  const GpuLoc dst{node(rng), gpu(rng)};
  if (rng() % 4 == 0) {
    return topo.HostToGpu(dst.node, dst);
  }
  return topo.GpuToGpu({node(rng), gpu(rng)}, dst);
}

void StartComplete(benchmark::State& state, int nodes) {
  const int active = static_cast<int>(state.range(0));
  const Topology topo = *Topology::Build(*NetPreset("blitzscale-a", nodes));
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> bytes(1 << 20, 1 << 30);
  FlowNetwork net(topo.Capacities(), absl::UnixEpoch());
  absl::Time now = absl::UnixEpoch();
  for (int i = 0; i < active; ++i) {
    net.Start(now, RandomPath(topo, rng), bytes(rng));
  }
  std::vector<Path> paths;
  for (int i = 0; i < 4096; ++i) {
    paths.push_back(RandomPath(topo, rng));
  }
  size_t k = 0;
  int64_t completed = 0;
  for (auto _ : state) {
    net.Start(now, paths[k++ % paths.size()], bytes(rng));
    now = net.NextCompletion();
    completed += static_cast<int64_t>(net.AdvanceTo(now).size());
  }
  state.counters["completed_per_iter"] =
      static_cast<double>(completed) / static_cast<double>(state.iterations());
  state.counters["active"] = static_cast<double>(net.num_active());
}

void BM_StartComplete1000Gpus(benchmark::State& state) {
  StartComplete(state, 125);
}
BENCHMARK(BM_StartComplete1000Gpus)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

// Worst case for component-local recomputation: 4 nodes, so every flow shares links with most
// others and each change recomputes (nearly) the whole network.
void BM_StartCompleteDense(benchmark::State& state) {
  StartComplete(state, 4);
}
BENCHMARK(BM_StartCompleteDense)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice::core::net
