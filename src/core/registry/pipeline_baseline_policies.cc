// inferline and cocktail policy sets (see pipeline_baseline_policies.h).
#include "core/registry/pipeline_baseline_policies.h"

#include <algorithm>

#include "common/status.h"
#include "core/baselines/cocktail_scaler.h"
#include "core/baselines/exclusive_placement.h"
#include "core/baselines/inferline_scaler.h"
#include "core/baselines/static_share_controller.h"
#include "core/registry/composed_policy_set.h"
#include "core/registry/param_reader.h"
#include "core/registry/stage_sizing.h"

namespace sluice::core {
namespace {

// Whole-GPU parts shared by both sets.
PolicyParts WholeGpuParts(std::string name, NodeOrder order) {
  PolicyParts parts;
  parts.name = std::move(name);
  parts.placement = std::make_unique<ExclusivePlacement>(order);
  parts.quota = [](const FunctionTraits&) {
    return SmQuota{1.0, 1.0};
  };
  parts.controller = [](GpuId) {
    return std::make_unique<StaticShareController>();
  };
  parts.work_conserving = false;
  return parts;
}

InferLineStage ToStage(const FunctionTraits& f, absl::Duration budget, absl::Duration slo,
                       int stages, int min_replicas) {
  InferLineStage s;
  s.service_rps = StageThroughput(f);
  s.budget = StageTarget(budget, slo, stages, s.service_rps);
  s.min_replicas = std::max({1, min_replicas, f.min_instances});
  s.max_replicas = std::max(s.min_replicas, f.max_instances);
  return s;
}

// A one-stage InferLineScaler behind the HorizontalScaler interface (functions no pipeline
// drives): each sample is a window, Desired is the planner/tuner target.
class InferLineFunctionScaler final : public HorizontalScaler {
 public:
  explicit InferLineFunctionScaler(std::unique_ptr<InferLineScaler> s) : s_(std::move(s)) {}
  std::string_view name() const override { return "inferline"; }
  void Observe(const LoadSample& sample) override {
    PipelineStageSample x;
    x.arrival_rps = sample.rps + std::max(0, sample.queued);  // queue drains within 1 s
    x.ready_replicas = sample.instances;
    s_->Observe({x}, sample.at);
    s_->Decide(sample.at, 0);
  }
  int Desired(absl::Time) const override { return s_->target(0); }

 private:
  std::unique_ptr<InferLineScaler> s_;
};

class InferLinePolicySet final : public PolicySet {
 public:
  InferLinePolicySet(InferLineConfig base, int min_replicas, NodeOrder order)
      : base_(std::move(base)), min_replicas_(min_replicas), placement_(order) {}
  std::string_view name() const override { return "inferline"; }
  PlacementPolicy& placement() override { return placement_; }
  SmQuota QuotaFor(const FunctionTraits&) const override { return {1.0, 1.0}; }
  bool work_conserving() const override { return false; }
  std::unique_ptr<VerticalController> MakeVerticalController(GpuId) const override {
    return std::make_unique<StaticShareController>();
  }

  std::unique_ptr<HorizontalScaler> MakeScaler(const FunctionTraits& f) const override {
    InferLineConfig c = base_;
    c.stages = {ToStage(f, absl::ZeroDuration(), f.slo, 1, min_replicas_)};
    if (!(c.stages[0].service_rps > 0)) {  // unknown throughput: size as 1 rps, budget 2 s
      c.stages[0].service_rps = 1;
      c.stages[0].budget = absl::Seconds(2);
    }
    auto s = InferLineScaler::Create(c);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::make_unique<InferLineFunctionScaler>(std::move(*s));
  }

  std::unique_ptr<PipelineScaler> MakePipelineScaler(
      const std::vector<FunctionTraits>& stages,
      const std::vector<PipelineStageTraits>& stage_traits, absl::Duration slo) const override {
    if (stages.empty() || stages.size() != stage_traits.size())
      return nullptr;
    InferLineConfig c = base_;
    const int n = static_cast<int>(stages.size());
    for (int i = 0; i < n; ++i) {
      c.stages.push_back(ToStage(stages[i], stage_traits[i].latency_target, slo, n, min_replicas_));
      if (!(c.stages.back().service_rps > 0))
        return nullptr;
    }
    auto s = InferLineScaler::Create(c);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  }

 private:
  InferLineConfig base_;
  int min_replicas_;
  ExclusivePlacement placement_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeInferLinePolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  ParamReader r("inferline", params, file);
  InferLineConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.plan_period, r.Seconds("plan_period_s", c.plan_period, 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.tuner_history,
                          r.Seconds("tuner_history_s", c.tuner_history, 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.scale_down_hold,
                          r.Seconds("scale_down_hold_s", c.scale_down_hold, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min_r, r.Int("min_replicas", 1, 0, 1 << 20));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  return std::unique_ptr<PolicySet>(
      new InferLinePolicySet(std::move(c), static_cast<int>(min_r), order));
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeCocktailPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  ParamReader r("cocktail", params, file);
  CocktailConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.interval, r.Seconds("interval_s", c.interval, 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.horizon, r.Seconds("horizon_s", c.horizon, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.alpha, r.Double("alpha", c.alpha, 1e-9, 1));
  SLUICE_ASSIGN_OR_RETURN(c.beta, r.Double("beta", c.beta, 0, 1));
  SLUICE_ASSIGN_OR_RETURN(c.over_provision, r.Double("over_provision", c.over_provision, 0, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.keep_alive, r.Seconds("keep_alive_s", c.keep_alive, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(c.queue_drain, r.Seconds("queue_drain_s", c.queue_drain, 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min_i, r.Int("min_instances", 1, 0, 1 << 20));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  PolicyParts parts = WholeGpuParts("cocktail", order);
  parts.scaler = [c, min_i](const FunctionTraits& f) -> std::unique_ptr<HorizontalScaler> {
    CocktailConfig cfg = c;
    std::tie(cfg.min_instances, cfg.max_instances) = ScalerBounds(f, static_cast<int>(min_i));
    cfg.capacity_rps = StageThroughput(f);
    auto s = CocktailScaler::Create(cfg);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  };
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace sluice::core
