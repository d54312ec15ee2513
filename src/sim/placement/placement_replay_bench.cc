// Placement replay cost: Dilu's N = 3,200 instance list (5,440 start/delete events; the seeded
// generator's list of the same size when ../shared/data is absent) replayed onto 1,000 nodes x 4
// GPUs (40 GiB) under each policy of the Dilu §5.5 study, including the per-timestamp
// fragmentation measurement. Dilu's own Python simulator takes about 38 s per policy. Also the
// cost of reading and parsing the xz-compressed list.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

#include "core/registry/policy_registry.h"
#include "sim/placement/instance_list.h"
#include "sim/placement/replay.h"
#include "sim/placement/synthetic_instances.h"

namespace sluice::sim {
namespace {

std::string ListPath() {
  const char* data = std::getenv("SLUICE_DATA_DIR");
  const char* source = std::getenv("SLUICE_SOURCE_DIR");
  const std::string dir = data != nullptr && *data != '\0' ? std::string(data)
                          : source != nullptr              ? std::string(source) + "/../shared/data"
                                                           : std::string("../shared/data");
  return dir + "/dilu-artifacts/sim_instances/instances-3200.txt.xz";
}

const std::vector<PlacementEvent>& Events() {
  static const std::vector<PlacementEvent>* events = [] {
    absl::StatusOr<std::vector<PlacementEvent>> e = LoadInstanceList(ListPath());
    if (!e.ok())
      e = GenerateSyntheticInstances({3200, 1});
    return new std::vector<PlacementEvent>(std::move(*e));
  }();
  return *events;
}

void BM_Replay3200(benchmark::State& state, const std::string& policy) {
  const std::vector<PlacementEvent>& events = Events();
  core::NodeSpec node;
  node.gpu_count = 4;
  node.gpu.memory = core::Bytes::GiB(40);
  const core::ClusterSpec cluster = core::ClusterSpec::Uniform(1000, node);
  int peak = 0;
  for (auto _ : state) {
    std::unique_ptr<core::PolicySet> set = *core::MakePolicySet(policy, {}, "bench");
    absl::StatusOr<ReplayResult> r = ReplayPlacement(events, cluster, *set);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    peak = r->peak_active_gpus;
  }
  state.counters["events"] = static_cast<double>(events.size());
  state.counters["peak_gpus"] = peak;
}
BENCHMARK_CAPTURE(BM_Replay3200, exclusive, "exclusive")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay3200, infless_l, "infless-l")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay3200, infless_r, "infless-r")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Replay3200, dilu, "dilu")->Unit(benchmark::kMillisecond);

void BM_LoadInstanceList3200(benchmark::State& state) {
  for (auto _ : state) {
    absl::StatusOr<std::vector<PlacementEvent>> e = LoadInstanceList(ListPath());
    if (!e.ok()) {
      state.SkipWithError("instances-3200.txt.xz not found");
      return;
    }
    benchmark::DoNotOptimize(e->data());
  }
}
BENCHMARK(BM_LoadInstanceList3200)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::sim
