// The quart policy set: param parsing, the PipelineScaler adapter over QuartScaler, and the set.
#include "core/registry/quart_policies.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "core/baselines/static_share_controller.h"
#include "core/quart/quart_function_scaler.h"
#include "core/quart/quart_placement.h"
#include "core/quart/quart_scaler.h"
#include "core/registry/composed_policy_set.h"
#include "core/registry/param_reader.h"
#include "core/registry/stage_sizing.h"

namespace sluice::core {
namespace {

struct QuartParams {
  QuartConfig scaler;  // every knob but the stages
  DispersedPlacementConfig placement;
  int min_replicas = 1;
  absl::Duration queue_drain = absl::Seconds(1);
};

absl::Status ReadPid(ParamReader& r, PidConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(c.kp, r.Double("kp", c.kp, 0, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.ki, r.Double("ki", c.ki, 0, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.kd, r.Double("kd", c.kd, 0, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.error_limit, r.Double("error_limit", c.error_limit, 1e-9, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.integral_limit, r.Double("integral_limit", c.integral_limit, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.max_step, r.Double("max_step", c.max_step, 1e-9, 1e6));
  return absl::OkStatus();
}

absl::Status ReadKeyAndSmoother(ParamReader& r, KeyStageConfig& k, SmootherConfig& s) {
  SLUICE_ASSIGN_OR_RETURN(k.model_weight, r.Double("model_weight", k.model_weight, 0, 1));
  SLUICE_ASSIGN_OR_RETURN(k.unstable_wait_cap,
                          r.Seconds("unstable_wait_cap_s", k.unstable_wait_cap, 1e-6, 1e6));
  SLUICE_ASSIGN_OR_RETURN(k.key_share_factor,
                          r.Double("key_share_factor", k.key_share_factor, 1, 1e6));
  SLUICE_ASSIGN_OR_RETURN(s.beta_min, r.Double("beta_min", s.beta_min, 0, 1));
  SLUICE_ASSIGN_OR_RETURN(s.base_hold, r.Seconds("hold_s", s.base_hold, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(s.propagation_hold_factor,
                          r.Double("propagation_hold_factor", s.propagation_hold_factor, 0, 1e6));
  SLUICE_ASSIGN_OR_RETURN(s.burst_cv, r.Double("burst_cv", s.burst_cv, 1e-9, 1e6));
  SLUICE_ASSIGN_OR_RETURN(const int64_t reclaim,
                          r.Int("max_reclaim_per_step", s.max_reclaim_per_step, 1, 1 << 20));
  s.max_reclaim_per_step = static_cast<int>(reclaim);
  return absl::OkStatus();
}

absl::StatusOr<QuartParams> ReadParams(std::span<const PolicyParam> params,
                                       const std::string& file) {
  ParamReader r("quart", params, file);
  QuartParams p;
  QuartConfig& c = p.scaler;
  SLUICE_RETURN_IF_ERROR(ReadPid(r, c.pid));
  SLUICE_ASSIGN_OR_RETURN(c.correction_bound_factor,
                          r.Double("correction_bound_factor", c.correction_bound_factor, 0, 1e6));
  SLUICE_RETURN_IF_ERROR(ReadKeyAndSmoother(r, c.key, c.smoother));
  SLUICE_ASSIGN_OR_RETURN(c.cpu.max_duration,
                          r.Seconds("cpu_max_duration_s", c.cpu.max_duration, 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t slack, r.Int("cache_slack", 1, 0, 1 << 20));
  p.placement.cache_slack = static_cast<int>(slack);
  SLUICE_ASSIGN_OR_RETURN(c.period, r.Seconds("period_s", c.period, 1e-6, 1e6));
  SLUICE_ASSIGN_OR_RETURN(const int64_t total, r.Int("total_replicas", 0, 0, 1 << 20));
  c.total_replicas = static_cast<int>(total);
  SLUICE_ASSIGN_OR_RETURN(c.rebalance, r.Bool("rebalance", c.rebalance));
  SLUICE_ASSIGN_OR_RETURN(c.rebalance_headroom,
                          r.Double("rebalance_headroom", c.rebalance_headroom, 1, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.rebalance_cooldown,
                          r.Seconds("rebalance_cooldown_s", c.rebalance_cooldown, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.rebalance_from_entry,
                          r.Bool("rebalance_from_entry", c.rebalance_from_entry));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min_r, r.Int("min_replicas", 1, 0, 1 << 20));
  p.min_replicas = static_cast<int>(min_r);
  SLUICE_ASSIGN_OR_RETURN(p.queue_drain, r.Seconds("queue_drain_s", p.queue_drain, 1e-6, 1e9));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  if (c.correction_bound_factor > 0 && c.correction_bound_factor < 1) {
    return ComboError(params, file, "quart", {"correction_bound_factor"}, "must be 0 or >= 1");
  }
  if (c.rebalance && c.total_replicas == 0) {
    return ComboError(params, file, "quart", {"rebalance", "total_replicas"},
                      "rebalance needs total_replicas > 0");
  }
  return p;
}

// QuartScaler behind the pipeline-policy contract. Decides at most once per `period`.
class QuartPipelineScaler final : public PipelineScaler {
 public:
  explicit QuartPipelineScaler(std::unique_ptr<QuartScaler> s) : scaler_(std::move(s)) {}
  std::string_view name() const override { return "quart"; }

  void Observe(const std::vector<PipelineStageSample>& samples, absl::Time now) override {
    if (samples.size() != scaler_->config().stages.size())
      return;  // QuartScaler would ignore it too
    scaler_->Observe(samples, now);
    fresh_ = true;
  }

  PipelineDecision Decide(absl::Time now, int free_cpu_cores) override {
    PipelineDecision out;
    out.stages.resize(scaler_->config().stages.size());
    if (!fresh_ || now < last_ + scaler_->config().period)
      return out;  // decided on this window already, or within the period
    fresh_ = false;
    last_ = now;
    const QuartDecision d = scaler_->Decide(now, free_cpu_cores);
    for (size_t i = 0; i < d.stages.size(); ++i) {
      out.stages[i] = {d.stages[i].key, d.stages[i].replica_delta, d.stages[i].cpu_worker_delta};
    }
    out.key_stages = d.key_stages;
    return out;
  }

  // A window waiting for its period; otherwise only a new window can change a decision.
  absl::Time NextWakeup() const override {
    return fresh_ ? last_ + scaler_->config().period : absl::InfiniteFuture();
  }

 private:
  std::unique_ptr<QuartScaler> scaler_;
  bool fresh_ = false;
  absl::Time last_ = absl::InfinitePast();
};

CpuStageProfile CpuProfile(const PipelineCpuProfile& p) {
  CpuStageProfile c;
  if (!(p.cpu_slowdown > 0) || !std::isfinite(p.cpu_slowdown)) {
    c.max_workers = 0;  // never on CPU
    return c;
  }
  c.cpu_slowdown = std::max(1.0, p.cpu_slowdown);
  c.cores_per_worker = std::max(1, p.cores_per_worker);
  c.max_workers = std::max(0, p.max_workers);
  return c;
}

class QuartPolicySet final : public PolicySet {
 public:
  QuartPolicySet(QuartParams p, std::unique_ptr<QuartPlacement> placement)
      : params_(std::move(p)), placement_(std::move(placement)) {}

  std::string_view name() const override { return "quart"; }
  PlacementPolicy& placement() override { return *placement_; }
  SmQuota QuotaFor(const FunctionTraits&) const override { return {1.0, 1.0}; }
  bool work_conserving() const override { return false; }
  std::unique_ptr<VerticalController> MakeVerticalController(GpuId) const override {
    return std::make_unique<StaticShareController>();
  }

  std::unique_ptr<HorizontalScaler> MakeScaler(const FunctionTraits& f) const override {
    QuartFunctionScalerConfig c;
    c.min_instances = std::max(0, f.min_instances);
    c.max_instances = std::max(c.min_instances, f.max_instances);
    c.capacity_rps = StageThroughput(f);
    c.latency_target = StageTarget(absl::ZeroDuration(), f.slo, 1, c.capacity_rps);
    c.hold = params_.scaler.smoother.base_hold;
    c.queue_drain = params_.queue_drain;
    auto s = QuartFunctionScaler::Create(c);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  }

  std::unique_ptr<PipelineScaler> MakePipelineScaler(
      const std::vector<FunctionTraits>& stages,
      const std::vector<PipelineStageTraits>& stage_traits, absl::Duration slo) const override {
    if (stages.empty() || stages.size() != stage_traits.size())
      return nullptr;
    QuartConfig c = params_.scaler;
    const int n = static_cast<int>(stages.size());
    for (int i = 0; i < n; ++i) {
      QuartStageSpec s;
      s.service_rps = StageThroughput(stages[i]);
      if (!(s.service_rps > 0))
        return nullptr;  // unknown throughput: the stages scale on their own
      const double cv = stage_traits[i].service_cv;
      s.service_cv = std::isfinite(cv) ? std::max(0.0, cv) : 0.0;
      s.min_replicas = std::max(params_.min_replicas, stages[i].min_instances);
      s.max_replicas = std::max({1, s.min_replicas, stages[i].max_instances});
      s.latency_target = StageTarget(stage_traits[i].latency_target, slo, n, s.service_rps);
      s.cpu = CpuProfile(stage_traits[i].cpu);
      c.stages.push_back(s);
    }
    auto scaler = QuartScaler::Create(c);
    SLUICE_CHECK_MSG(scaler.ok(), scaler.status().ToString());  // inputs clamped above
    return std::make_unique<QuartPipelineScaler>(std::move(*scaler));
  }

 private:
  QuartParams params_;
  std::unique_ptr<QuartPlacement> placement_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeQuartPolicySet(std::span<const PolicyParam> params,
                                                              const std::string& file) {
  SLUICE_ASSIGN_OR_RETURN(QuartParams p, ReadParams(params, file));
  auto placement = QuartPlacement::Create(p.placement);
  if (!placement.ok())
    return placement.status();
  return std::unique_ptr<PolicySet>(new QuartPolicySet(std::move(p), std::move(*placement)));
}

}  // namespace sluice::core
