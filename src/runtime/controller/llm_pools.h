// Prefill/decode pools of a disaggregated LLM function on the controller (BlitzScale §5,
// docs/blitzscale.md "On the platform"): the options, the per-function pool state the controller
// keeps beside its other scalers, and the pure pieces of the P/D path (the instance stats
// answer, per-pool load for core::llm::LlmAutoscaler, mutation victims, the scaler config, the
// spec an instance of a role is started with). The controller's loop code that drives them is
// controller_llm.cc. Thread-compatible: values and pure functions; LlmPools lives on the
// controller's loop like the rest of ControllerFunction.
#ifndef SLUICE_RUNTIME_CONTROLLER_LLM_POOLS_H_
#define SLUICE_RUNTIME_CONTROLLER_LLM_POOLS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/llm/llm_autoscaler.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {

inline constexpr char kPrefillRole[] = "prefill";
inline constexpr char kDecodeRole[] = "decode";

// ControllerOptions::llm. The per-instance upper bounds left at 0 come from the function's
// perf model (core::llm::FillProfiledBounds over core::BuiltinLlmModel(spec model name, gpu)).
struct LlmControllerOptions {
  absl::Duration poll = absl::Milliseconds(250);  // instance stats poll = autoscaler tick
  absl::Duration window = absl::Seconds(1);       // LlmScalerConfig::window
  absl::Duration scale_down_timeout = absl::Seconds(2);
  double prefill_tokens_per_s = 0;  // per prefill instance; 0: from the perf model
  double decode_tokens_per_s = 0;   // per decode instance; 0: from the perf model
  double kv_usage_upper = 0.85;
  double lower_fraction = 0.5;
  bool mutation = true;       // BlitzScale's prefill -> decode mutation on decode scale-out
  std::string gpu = "a100";   // the perf model's GPU for the bounds
  bool autoscale = true;      // false: pools stay at the spec's sizes (operator mutations only)
};

// GET /sluice/v1/stats of an LLM instance (examples/llm README, "LLM instance API"). Counters
// absent from older instances read 0.
struct LlmInstanceStats {
  std::string role;  // "prefill", "decode" or "colocated"
  int64_t kv_capacity_tokens = 0;
  int64_t kv_used_tokens = 0;
  int running = 0;
  int waiting = 0;
  int64_t waiting_prompt_tokens = 0;
  int64_t prompt_tokens_total = 0;     // prefilled since the instance started
  int64_t generated_tokens_total = 0;  // generated since the instance started
};
// InvalidArgument naming the field when the body is not such an object.
absl::StatusOr<LlmInstanceStats> ParseLlmStats(const std::string& body);

// One routable instance of the function as the autoscaler's load sees it.
struct LlmInstanceView {
  int64_t id = 0;
  std::string role;  // its pool: the target role while a mutation is under way
  bool ready = false;
  bool mutating = false;
  bool has_stats = false;
  LlmInstanceStats stats;             // latest answer (has_stats)
  double prompt_tokens_per_s = 0;     // from the last two answers' counters
  double generated_tokens_per_s = 0;
};

// Per-pool load at `now`: prefill tokens/s = the prefill pool's prefill rate plus its queued
// prompt tokens spread over `window` (queued demand); decode tokens/s = the decode pool's
// generation rate; kv_usage = mean kv_used / kv_capacity over decode instances with stats;
// instance counts by pool (starting ones included, as the simulator counts loading ones).
core::llm::LlmLoad PoolLoad(const std::vector<LlmInstanceView>& instances, absl::Time now,
                            absl::Duration window);

// Up to `n` prefill instances to mutate into decode: the ready, not mutating ones, ordered by
// core::llm::PickMutationVictims (the simulator's rule too: fewest queued prompt tokens, then
// fewest running + waiting requests, then the oldest). Never the last ready prefill instance.
std::vector<int64_t> PickMutations(const std::vector<LlmInstanceView>& instances, int n);

// The scaler config for a disaggregated spec: pools in [1, max(max_instances, spec pool size)],
// options' window/timeout/bounds, mutation per options; bounds left 0 filled from the perf
// model of spec.model.name on options.gpu. NotFound / InvalidArgument when the model is unknown
// and a bound is not given, or the config is invalid (the field named).
absl::StatusOr<core::llm::LlmScalerConfig> LlmPoolScalerConfig(const FunctionSpec& spec,
                                                               int max_instances,
                                                               const LlmControllerOptions& o);

// `spec` for an instance of `role` ("" = unchanged): "--role <role>" appended to the command
// and SLUICE_LLM_ROLE=<role> in the environment (for image specs, which have no command).
FunctionSpec SpecForRole(const FunctionSpec& spec, const std::string& role);

// True for kind llm with `llm.disaggregated`.
bool IsDisaggregated(const FunctionSpec& spec);

// The controller's P/D state of one disaggregated function (ControllerFunction::llm).
struct LlmPools {
  // Null when pools do not autoscale (options, or `message` says why: e.g. an unknown model).
  std::unique_ptr<core::llm::LlmAutoscaler> scaler;
  std::string message;
  int prefill_desired = 0;
  int decode_desired = 0;
  int mutations = 0;  // completed role switches (autoscaler and operator)
  absl::Time last_tick = absl::InfinitePast();
  // Latest stats per instance and the rates from the previous answer.
  struct Polled {
    bool has = false;  // an answer arrived
    LlmInstanceStats stats;
    absl::Time at = absl::InfinitePast();
    double prompt_tokens_per_s = 0;
    double generated_tokens_per_s = 0;
    bool in_flight = false;
  };
  std::map<int64_t, Polled> polled;
};

// Folds a stats answer taken at `at` into `p`: the rates are the counters' deltas over the
// time since the previous answer (0 on the first one or when a counter went backwards).
void AddStats(LlmPools::Polled& p, const LlmInstanceStats& s, absl::Time at);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_LLM_POOLS_H_
