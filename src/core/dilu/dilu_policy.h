// Dilu as one configurable policy: DiluConfig (every knob, paper defaults), its strict parser
// from an experiment's `key: value` params, and DiluComponents, the validated factory the policy
// registry wraps into a PolicySet (one scheduler, a lazy scaler per function, a vertical
// controller per GPU). Value types; DiluComponents is immutable after creation and its factory
// methods may be called from one thread at a time.
#ifndef SLUICE_CORE_DILU_DILU_POLICY_H_
#define SLUICE_CORE_DILU_DILU_POLICY_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/dilu/lazy_scaler.h"
#include "core/dilu/profiler.h"
#include "core/dilu/scheduler.h"
#include "core/dilu/vertical_controller.h"
#include "core/policy/horizontal.h"
#include "core/policy/policy_params.h"
#include "core/policy/vertical.h"

namespace sluice::core {

// Keys (defaults in brackets):
//   scheduler  alpha [0.5], beta [0.5], omega [1.0], gamma [1.5], node_candidates [64],
//              affinity [same_function | partner_workers]
//   vertical   period_ms [5], eta_violation [0.6], eta_violation_llm [0.3], eta_increase [1.3],
//              eta_recover [0.2], recovery_every [5], rate_window [20 periods],
//              min_klc_periods [1], klc_span_periods [10], klc_min_window [2000 periods;
//              0 = all-time T_min], token_floor [0.01], work_conserving [true]
//   horizontal window_s [40], phi_out [20], phi_in [30], min_instances [1], max_instances [2^20],
//              reset_window [false]
//   profiler   p_request [0.8], p_limit [1.0], tolerance [0.02], sm_unit [0.01], sm_step [0.1],
//              max_batch [32], slo_fraction [0.5], limit_factor [2], te_tolerance [0.05]
// Ablation switches (the paper's Dilu-ablation experiment), all [true]:
//   resource_complementarity=false  plain first fit by GPU id under the same Omega / gamma /
//                                   memory checks: no fragmentation score, no memory worst fit;
//   workload_affinity=false         no affinity tier (Algorithm 1 lines 11-12 skipped);
//   vertical_scaling=false          static tokens at each instance's request every period
//                                   (StaticRequestController): no scale-up, no work conservation.
// Booleans accept true/false, yes/no, on/off, 1/0.
struct DiluConfig {
  SchedulerConfig scheduler;
  VerticalConfig vertical;
  LazyScalerConfig scaler;  // capacity_rps is per function, given to MakeScaler
  ProfilerConfig profiler;
  bool vertical_scaling = true;
};

// Strict: an unknown or repeated key, a malformed value or one out of range, and inconsistent
// pairs (gamma < omega, max_instances < min_instances, p_request > p_limit, sm_unit > sm_step,
// eta_recover above a violation threshold, alpha = beta = 0) give InvalidArgument via
// common::InputError naming `file`, the param's line and its key.
absl::StatusOr<DiluConfig> ParseDiluConfig(std::span<const PolicyParam> params,
                                           const std::string& file);

class DiluComponents {
 public:
  // InvalidArgument when some part of `config` is invalid (each component's Create rules).
  static absl::StatusOr<DiluComponents> Create(const DiluConfig& config);

  const DiluConfig& config() const { return config_; }
  std::unique_ptr<DiluScheduler> MakeScheduler() const;
  // Lazy scaler for one function of profiled per-instance capacity `capacity_rps`. Bounds:
  // [max(config min_instances, function_min), min(config max_instances, function_max)]; the
  // upper bound never drops below the lower one.
  std::unique_ptr<HorizontalScaler> MakeScaler(double capacity_rps, int function_min,
                                               int function_max) const;
  // DiluVerticalController, or StaticRequestController when vertical_scaling is off.
  std::unique_ptr<VerticalController> MakeController() const;
  // Dilu gives each instance its profiled elastic <request, limit>.
  SmQuota QuotaFor(const SmQuota& profiled) const { return profiled; }
  // Idle SM capacity flows to busy instances (up to their token budgets) unless -VS.
  bool work_conserving() const {
    return config_.vertical_scaling && config_.vertical.work_conserving;
  }

 private:
  explicit DiluComponents(const DiluConfig& config) : config_(config) {}
  DiluConfig config_;
};

// ParseDiluConfig + DiluComponents::Create.
absl::StatusOr<DiluComponents> MakeDiluComponents(std::span<const PolicyParam> params,
                                                  const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_DILU_POLICY_H_
