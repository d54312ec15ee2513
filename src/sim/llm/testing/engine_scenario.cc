// The LlmEngine test scenario runner (see engine_scenario.h). Test-only.
#include "sim/llm/testing/engine_scenario.h"

#include <memory>

#include "common/status.h"
#include "sim/llm/testing/fake_llm.h"

namespace sluice::sim::llm::testing {

core::net::ClusterNetSpec SmallCluster(int nodes, int gpus_per_node) {
  core::net::ClusterNetSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.nvlink_gbps = 0;
  c.pcie_gpu_gpu_gbps = Gbps(1);  // 1 GB/s
  c.rdma_gbps = Gbps(1);          // 1 GB/s per NIC and direction
  c.gpus_per_nic = 1;
  c.host_gpu_gbps = Gbps(2);       // 2 GB/s
  c.ssd_gbps_per_gpu = Gbps(0.5);  // 0.5 GB/s
  return c;
}

Scenario Basic(bool disaggregated, int nodes, int gpus) {
  Scenario s;
  s.config.name = "t";
  s.config.cluster = SmallCluster(nodes, gpus);
  s.config.duration = absl::Seconds(20);
  s.config.drain_timeout = absl::Seconds(30);
  LlmFunctionConfig f;
  f.name = "f";
  f.model = "fake";
  f.disaggregated = disaggregated;
  f.initial_prefill = 1;
  f.initial_decode = 1;
  s.config.functions.push_back(f);
  s.policy.set.name = "test";
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kNone;
  return s;
}

absl::StatusOr<LlmRunResult> RunScenario(const Scenario& s) {
  FakeLlmPerfModel model(s.kv_tokens, s.layers);
  EngineDeps deps;
  deps.models = {&model};
  if (s.scripted_arrivals) {
    deps.make_source = [&s](int) {
      return std::make_unique<ScriptedSource>(s.arrivals);
    };
  }
  std::vector<ScriptedScaler*> scalers;
  deps.make_scaler = [&s, &scalers](int, const core::llm::LlmScalerConfig&) {
    auto scaler = std::make_unique<ScriptedScaler>(s.script);
    scalers.push_back(scaler.get());
    return scaler;
  };
  deps.plan_live = s.plan_live;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<LlmEngine> e,
                          LlmEngine::Create(s.config, s.policy, std::move(deps)));
  absl::StatusOr<LlmRunResult> r = e->Run();
  for (const ScriptedScaler* sc : scalers)
    s.observed = sc->loads;
  return r;
}

}  // namespace sluice::sim::llm::testing
