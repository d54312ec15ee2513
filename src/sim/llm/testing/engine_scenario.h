// A tiny LlmEngine scenario runner for the engine's tests (engine_test.cc,
// engine_robustness_test.cc): a small cluster of slow links, one function on the fake perf model,
// scripted arrivals and scaling decisions. Test-only; not thread-safe.
#ifndef SLUICE_SIM_LLM_TESTING_ENGINE_SCENARIO_H_
#define SLUICE_SIM_LLM_TESTING_ENGINE_SCENARIO_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "sim/llm/engine.h"

namespace sluice::sim::llm::testing {

inline const absl::Time kT0 = absl::UnixEpoch();

// Gbps such that the link moves `gb_per_s` x 1e9 bytes per second.
inline double Gbps(double gb_per_s) {
  return gb_per_s * 8;
}

// `nodes` x `gpus_per_node`, no NVLink, 1 GB/s PCIe GPU-GPU and NICs, 2 GB/s host-GPU, 0.5 GB/s
// SSD.
core::net::ClusterNetSpec SmallCluster(int nodes, int gpus_per_node);

struct Scenario {
  LlmSimConfig config;
  LlmPolicyConfig policy;
  std::vector<Arrival> arrivals;  // function 0
  std::vector<std::pair<absl::Time, core::llm::LlmScaleDecision>> script;
  int64_t kv_tokens = 1000;
  int layers = 4;
  bool scripted_arrivals = true;
  std::function<absl::StatusOr<core::llm::ZigzagPlan>(const core::llm::ZigzagInput&)> plan_live;
  mutable std::vector<core::llm::LlmLoad> observed;  // what the scaler saw
};

// One function "f" (model "fake"), one prefill + one decode instance (or two colocated), 20 s.
Scenario Basic(bool disaggregated, int nodes = 1, int gpus = 2);

// Runs `s` with the fake perf model and the scripted scaler; fills `s.observed`.
absl::StatusOr<LlmRunResult> RunScenario(const Scenario& s);

}  // namespace sluice::sim::llm::testing

#endif  // SLUICE_SIM_LLM_TESTING_ENGINE_SCENARIO_H_
