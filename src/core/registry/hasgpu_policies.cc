// kserve, fast-gshare and has-gpu policy sets. Params are validated here, once; the parts'
// factories then cannot fail.
#include "core/registry/hasgpu_policies.h"

#include <algorithm>
#include <tuple>

#include "common/status.h"
#include "core/baselines/exclusive_placement.h"
#include "core/baselines/kpa_scaler.h"
#include "core/baselines/reactive_scaler.h"
#include "core/baselines/static_share_controller.h"
#include "core/hasgpu/hasgpu_placement.h"
#include "core/hasgpu/hybrid_autoscaler.h"
#include "core/registry/composed_policy_set.h"

namespace sluice::core {
namespace {

std::unique_ptr<VerticalController> StaticController(GpuId) {
  return std::make_unique<StaticShareController>();
}

absl::Duration RequestLatency(const FunctionTraits& f) {
  if (f.latency != nullptr)
    return f.latency->BatchLatency(1, 1.0, 1.0);
  if (f.capacity_rps > 0)
    return absl::Seconds(1) / f.capacity_rps;
  return absl::Milliseconds(100);
}

absl::StatusOr<KpaConfig> ReadKpa(ParamReader& r) {
  KpaConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.target_concurrency, r.Double("target_concurrency", 0, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.target_utilization, r.Double("target_utilization", 0.7, 1e-6, 1));
  SLUICE_ASSIGN_OR_RETURN(c.stable_window, r.Seconds("stable_window_s", absl::Seconds(60), 1e-3, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.panic_window, r.Seconds("panic_window_s", absl::Seconds(6), 1e-3, 1e6));
  SLUICE_ASSIGN_OR_RETURN(const double pct, r.Double("panic_threshold_pct", 200, 1e-6, 1e6));
  c.panic_threshold = pct / 100;
  SLUICE_ASSIGN_OR_RETURN(c.max_scale_up_rate, r.Double("max_scale_up_rate", 1000, 1, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.max_scale_down_rate, r.Double("max_scale_down_rate", 2, 1, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.scale_to_zero_grace,
                          r.Seconds("scale_to_zero_grace_s", absl::Seconds(30), 0, 1e6));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min, r.Int("min_replicas", 1, 0, 1 << 20));
  c.min_instances = static_cast<int>(min);
  return c;
}

}  // namespace

HasGpuFunction HasGpuFunctionOf(const FunctionTraits& f) {
  HasGpuFunction h;
  h.latency = f.latency;
  h.max_batch = std::max(1, f.max_batch);
  h.slo = f.slo;
  h.memory = f.memory;
  const double held = f.profiled.held();
  h.fallback_rps_per_gpu = held > 0 ? f.capacity_rps / held : f.capacity_rps;
  h.min_instances = std::max(1, f.min_instances);
  h.max_instances = std::max(h.min_instances, f.max_instances);
  return h;
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeKservePolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file) {
  ParamReader r("kserve", params, file);
  SLUICE_ASSIGN_OR_RETURN(const KpaConfig kpa, ReadKpa(r));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  if (kpa.panic_window > kpa.stable_window) {
    return ComboError(params, file, "kserve", {"panic_window_s", "stable_window_s"},
                      "panic_window_s must be <= stable_window_s");
  }
  PolicyParts parts;
  parts.name = "kserve";
  parts.placement = std::make_unique<ExclusivePlacement>(order);
  parts.quota = [](const FunctionTraits&) { return SmQuota{1.0, 1.0, 1.0}; };
  parts.scaler = [kpa](const FunctionTraits& f) -> std::unique_ptr<HorizontalScaler> {
    KpaConfig c = kpa;
    c.request_latency = RequestLatency(f);
    if (c.target_concurrency <= 0) {
      const double saturated = f.capacity_rps * absl::ToDoubleSeconds(c.request_latency);
      c.target_concurrency = f.latency != nullptr && f.capacity_rps > 0
                                 ? std::max(saturated, 1e-3)
                                 : std::max(1, f.max_batch);
    }
    std::tie(c.min_instances, c.max_instances) = ScalerBounds(f, kpa.min_instances);
    absl::StatusOr<std::unique_ptr<KpaScaler>> s = KpaScaler::Create(c);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  };
  parts.controller = StaticController;
  parts.work_conserving = false;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

namespace {

// fast-gshare's fixed (s, q) for `f`.
SmQuota FastGshareQuota(const FunctionTraits& f, double sm, double q, const CapacityOptions& o) {
  if (f.kind == FunctionKind::kTraining)
    return {f.profiled.limit, f.profiled.limit, 1.0};
  if (sm > 0 && q > 0)
    return {sm, sm, q};
  if (f.latency == nullptr) {
    const double s = sm > 0 ? sm : f.profiled.limit;
    return {s, s, q > 0 ? q : 1.0};
  }
  const CapacityModel model(HasGpuFunctionOf(f), o);
  PodConfig best{1, 1.0, 1.0, -1};
  for (double s : sm > 0 ? std::vector<double>{sm} : model.partitions()) {
    for (double tq : q > 0 ? std::vector<double>{q} : model.quotas()) {
      const PodConfig c = model.Best(s, tq);
      if (c.capacity / c.cost() > best.capacity / best.cost() * (1 + 1e-9))
        best = c;
    }
  }
  return {best.sm, best.sm, best.q};
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeFastGsharePolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  ParamReader r("fast-gshare", params, file);
  SLUICE_ASSIGN_OR_RETURN(const double sm, r.Double("sm", 0, 0, 1));
  SLUICE_ASSIGN_OR_RETURN(const double tq, r.Double("time_quota", 0, 0, 1));
  CapacityOptions o;
  SLUICE_ASSIGN_OR_RETURN(o.sm_step, r.Double("sm_step", o.sm_step, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(o.quota_step, r.Double("quota_step", o.quota_step, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(o.slo_fraction, r.Double("slo_fraction", o.slo_fraction, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration keep_alive,
                          r.Seconds("keep_alive_s", absl::Seconds(10), 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min_instances, r.Int("min_instances", 1, 0, 1 << 20));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration drain,
                          r.Seconds("queue_drain_s", absl::Seconds(1), 1e-6, 1e9));
  SLUICE_RETURN_IF_ERROR(r.Finish());

  PolicyParts parts;
  parts.name = "fast-gshare";
  parts.placement = std::make_unique<HasGpuPlacement>(
      HasGpuPlacement::Options{"fast-gshare", 1 << 20, HeldOrder::kMostHeld});
  parts.quota = [sm, tq, o](const FunctionTraits& f) { return FastGshareQuota(f, sm, tq, o); };
  parts.scaler = [=](const FunctionTraits& f) {
    const SmQuota quota = FastGshareQuota(f, sm, tq, o);
    const double capacity =
        f.kind == FunctionKind::kTraining
            ? f.capacity_rps
            : CapacityModel(HasGpuFunctionOf(f), o).Best(quota.limit, quota.time_quota).capacity;
    return MakeReactiveScaler(f, keep_alive, drain, static_cast<int>(min_instances), capacity);
  };
  parts.controller = StaticController;
  parts.work_conserving = false;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

namespace {

absl::StatusOr<HybridAutoscalerConfig> ReadHybrid(ParamReader& r) {
  HybridAutoscalerConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.alpha, r.Double("alpha", c.alpha, 1e-6, 1));
  SLUICE_ASSIGN_OR_RETURN(c.beta, r.Double("beta", c.beta, 0, 1));
  CapacityOptions& o = c.capacity;
  SLUICE_ASSIGN_OR_RETURN(o.quota_step, r.Double("quota_step", o.quota_step, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(o.sm_step, r.Double("sm_step", o.sm_step, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(o.slo_fraction, r.Double("slo_fraction", o.slo_fraction, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(c.cooldown, r.Seconds("cooldown_s", c.cooldown, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.r_min, r.Double("r_min", c.r_min, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t types,
                          r.Int("max_partition_types", c.max_partition_types, 1, 1 << 20));
  c.max_partition_types = static_cast<int>(types);
  SLUICE_ASSIGN_OR_RETURN(const int64_t pods, r.Int("max_new_pods", c.max_new_pods, 1, 1 << 20));
  c.max_new_pods = static_cast<int>(pods);
  SLUICE_ASSIGN_OR_RETURN(c.queue_drain, r.Seconds("queue_drain_s", c.queue_drain, 1e-6, 1e9));
  KalmanConfig& k = c.kalman;
  SLUICE_ASSIGN_OR_RETURN(k.a, r.Double("kalman_a", k.a, 1e-6, 1e6));
  SLUICE_ASSIGN_OR_RETURN(k.h, r.Double("kalman_h", k.h, 1e-6, 1e6));
  SLUICE_ASSIGN_OR_RETURN(k.process_noise, r.Double("kalman_q", k.process_noise, 0, 1e12));
  SLUICE_ASSIGN_OR_RETURN(k.measurement_noise,
                          r.Double("kalman_d", k.measurement_noise, 1e-12, 1e12));
  SLUICE_ASSIGN_OR_RETURN(k.initial_covariance,
                          r.Double("kalman_p0", k.initial_covariance, 0, 1e12));
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeHasGpuPolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file) {
  ParamReader r("has-gpu", params, file);
  SLUICE_ASSIGN_OR_RETURN(const HybridAutoscalerConfig cfg, ReadHybrid(r));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration keep_alive,
                          r.Seconds("keep_alive_s", absl::Seconds(60), 0, 1e9));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  if (absl::Status s = ValidateHybridConfig(cfg); !s.ok())
    return ComboError(params, file, "has-gpu", {"beta", "alpha"}, s.message());

  PolicyParts parts;
  parts.name = "has-gpu";
  parts.placement = std::make_unique<HasGpuPlacement>(
      HasGpuPlacement::Options{"has-gpu", cfg.max_partition_types, HeldOrder::kLeastHeld});
  parts.quota = [cfg](const FunctionTraits& f) -> SmQuota {
    if (f.kind == FunctionKind::kTraining)
      return {f.profiled.limit, f.profiled.limit, 1.0};
    absl::StatusOr<std::unique_ptr<HybridAutoscaler>> s =
        HybridAutoscaler::Create(cfg, HasGpuFunctionOf(f));
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    const PodConfig c = (*s)->InitialConfig();
    return {c.sm, c.sm, c.q};
  };
  parts.scaler = [keep_alive](const FunctionTraits& f) {
    return MakeReactiveScaler(f, keep_alive, absl::Seconds(1), 0, f.capacity_rps);
  };
  parts.hybrid = [cfg](const FunctionTraits& f) -> std::unique_ptr<HybridScaler> {
    if (f.kind == FunctionKind::kTraining)
      return nullptr;
    absl::StatusOr<std::unique_ptr<HybridAutoscaler>> s =
        HybridAutoscaler::Create(cfg, HasGpuFunctionOf(f));
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  };
  parts.controller = StaticController;
  parts.work_conserving = false;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace sluice::core
