// Test doubles for the engine: a linear latency model, a first-fit placement, a scripted
// horizontal scaler, a fixed-token vertical controller and a PolicySet tying them together (with
// an optional hybrid scaler factory, hybrid scalers are in fake_hybrid.h, and an optional
// pipeline scaler factory, pipeline scalers are in fake_pipeline.h), so
// engine tests and the engine benchmark can work out expected results by hand. Header-only;
// not thread-safe.
#ifndef SLUICE_SIM_ENGINE_TESTING_FAKE_POLICY_H_
#define SLUICE_SIM_ENGINE_TESTING_FAKE_POLICY_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/perf/perf_model.h"
#include "core/registry/policy_registry.h"

namespace sluice::sim::testing {

// BatchLatency(b, s, q) = (base + per_extra x (b - 1)) / s / q; IterationTime(s) = iteration / s.
class LinearLatency : public core::LatencyModel {
 public:
  LinearLatency(absl::Duration base, absl::Duration per_extra, absl::Duration iteration)
      : base_(base), per_extra_(per_extra), iteration_(iteration) {}
  absl::Duration BatchLatency(int batch, double sm_share, double time_quota = 1.0) const override {
    const absl::Duration d = (base_ + per_extra_ * (std::max(batch, 1) - 1)) / sm_share;
    return time_quota < 1 ? d / time_quota : d;
  }
  absl::Duration IterationTime(double sm_share) const override { return iteration_ / sm_share; }

 private:
  absl::Duration base_, per_extra_, iteration_;
};

// A PerfModel holding one model "fake" (LinearLatency), with interference coefficient `kappa`.
inline std::unique_ptr<core::PerfModel> MakeFakePerf(
    absl::Duration base = absl::Milliseconds(100), absl::Duration per_extra = absl::ZeroDuration(),
    absl::Duration iteration = absl::Milliseconds(100), double kappa = 0,
    core::Bytes params = core::Bytes::GiB(1)) {
  auto perf = std::make_unique<core::PerfModel>();
  perf->set_interference_kappa(kappa);
  core::ModelInfo info;
  info.name = "fake";
  info.param_bytes = params;
  info.gpu_memory = core::Bytes::GiB(2);
  absl::Status s = perf->Add(info, std::make_unique<LinearLatency>(base, per_extra, iteration));
  (void)s;
  return perf;
}

// First GPUs in id order with room for the memory and sum of requests + request <= 1; with
// same_node, the first node that has enough such GPUs.
// Records every demand in `*demands` when set.
class FirstFitPlacement : public core::PlacementPolicy {
 public:
  std::string_view name() const override { return "first-fit"; }
  absl::StatusOr<std::vector<core::GpuId>> Place(const core::InstanceDemand& d,
                                                 const core::ClusterState& state) override {
    if (demands != nullptr)
      demands->push_back(d);
    auto fits = [&](const core::GpuState& g) {
      return g.memory_free() >= d.memory_per_gpu && g.sum_request + d.quota.request <= 1 + 1e-9;
    };
    for (int n = 0; n < state.node_count(); ++n) {
      std::vector<core::GpuId> picked;
      for (core::GpuId g : state.gpus_of(core::NodeId(n))) {
        if (fits(state.gpu(g)) && static_cast<int>(picked.size()) < d.gpus)
          picked.push_back(g);
      }
      if (static_cast<int>(picked.size()) == d.gpus)
        return picked;
      if (d.same_node)
        continue;
    }
    if (!d.same_node) {
      std::vector<core::GpuId> picked;
      for (const core::GpuState& g : state.gpus()) {
        if (fits(g) && static_cast<int>(picked.size()) < d.gpus)
          picked.push_back(g.id);
      }
      if (static_cast<int>(picked.size()) == d.gpus)
        return picked;
    }
    return absl::ResourceExhaustedError("no room");
  }
  std::vector<core::InstanceDemand>* demands = nullptr;
};

// Desired() follows a script of (time, count) steps; before the first step: `initial`.
// ActiveWanted() follows `active` steps the same way (empty: Desired()).
class ScriptedScaler : public core::HorizontalScaler {
 public:
  ScriptedScaler(int initial, std::vector<std::pair<absl::Time, int>> steps,
                 std::vector<std::pair<absl::Time, int>> active = {})
      : initial_(initial), steps_(std::move(steps)), active_(std::move(active)) {}
  int ActiveWanted(absl::Time now) const override {
    int d = Desired(now);
    for (const auto& [t, n] : active_) {
      if (t <= now)
        d = n;
    }
    return d;
  }
  std::string_view name() const override { return "scripted"; }
  void Observe(const core::LoadSample& s) override { samples.push_back(s); }
  int Desired(absl::Time now) const override {
    int d = initial_;
    for (const auto& [t, n] : steps_) {
      if (t <= now)
        d = n;
    }
    return d;
  }
  std::vector<core::LoadSample> samples;

 private:
  int initial_;
  std::vector<std::pair<absl::Time, int>> steps_;
  std::vector<std::pair<absl::Time, int>> active_;
};

// Issues fixed fractions of max_tokens (cap_fraction), or the limit when < 0; records calls
// and, when `split` is set, each call's time and instances.
class FixedTokenController : public core::VerticalController {
 public:
  using Split = std::vector<std::pair<absl::Time, std::vector<int64_t>>>;
  FixedTokenController(absl::Duration period, double cap_fraction, int* issue_calls,
                       Split* split = nullptr)
      : period_(period), cap_fraction_(cap_fraction), issue_calls_(issue_calls), split_(split) {}
  std::string_view name() const override { return "fixed-tokens"; }
  absl::Duration period() const override { return period_; }
  void Issue(absl::Time now, int64_t max_tokens, std::span<const core::InstanceActivity> in,
             std::span<int64_t> out) override {
    if (issue_calls_ != nullptr)
      ++*issue_calls_;
    if (split_ != nullptr) {
      split_->emplace_back(now, std::vector<int64_t>());
      for (const core::InstanceActivity& a : in)
        split_->back().second.push_back(a.instance.value());
    }
    for (size_t i = 0; i < in.size(); ++i) {
      const double f = cap_fraction_ >= 0 ? cap_fraction_ : in[i].quota.limit;
      out[i] = static_cast<int64_t>(f * static_cast<double>(max_tokens));
    }
  }

 private:
  absl::Duration period_;
  double cap_fraction_;
  int* issue_calls_;
  Split* split_;
};

struct FakePolicyOptions {
  bool work_conserving = true;
  std::optional<core::SmQuota> quota;  // default: the profiled quota
  absl::Duration controller_period = absl::InfiniteDuration();
  double controller_cap = -1;  // FixedTokenController's fraction; < 0 = limit
  int* issue_calls = nullptr;
  FixedTokenController::Split* issue_split = nullptr;  // every Issue's time and instances
  // Per function id: scaler script (missing = keep min_instances).
  std::vector<std::vector<std::pair<absl::Time, int>>> scripts;
  std::vector<ScriptedScaler*>* scalers_out = nullptr;  // borrowed pointers to made scalers
  // Per function id: ActiveWanted script (missing: Desired). Issue 13.
  std::vector<std::vector<std::pair<absl::Time, int>>> active_scripts;
  core::StartTraits start;  // start_traits()
  std::vector<core::InstanceDemand>* demands_out = nullptr;  // every demand placed
  // When set, MakeHybridScaler(traits) returns hybrid(traits) (may be null: horizontal then).
  std::function<std::unique_ptr<core::HybridScaler>(const core::FunctionTraits&)> hybrid;
  // When set, MakePipelineScaler(...) returns pipeline(...) (may be null: stages scale alone).
  std::function<std::unique_ptr<core::PipelineScaler>(
      const std::vector<core::FunctionTraits>&, const std::vector<core::PipelineStageTraits>&,
      absl::Duration)>
      pipeline;
};

class FakePolicySet : public core::PolicySet {
 public:
  explicit FakePolicySet(FakePolicyOptions o) : o_(std::move(o)) {
    placement_.demands = o_.demands_out;
  }
  std::string_view name() const override { return "fake"; }
  core::PlacementPolicy& placement() override { return placement_; }
  core::SmQuota QuotaFor(const core::FunctionTraits& f) const override {
    return o_.quota.value_or(f.profiled);
  }
  std::unique_ptr<core::HorizontalScaler> MakeScaler(const core::FunctionTraits& f) const override {
    const size_t id = static_cast<size_t>(f.id.value());
    auto s = std::make_unique<ScriptedScaler>(
        f.min_instances,
        id < o_.scripts.size() ? o_.scripts[id] : std::vector<std::pair<absl::Time, int>>{},
        id < o_.active_scripts.size() ? o_.active_scripts[id]
                                      : std::vector<std::pair<absl::Time, int>>{});
    if (o_.scalers_out != nullptr)
      o_.scalers_out->push_back(s.get());
    return s;
  }
  std::unique_ptr<core::VerticalController> MakeVerticalController(core::GpuId) const override {
    return std::make_unique<FixedTokenController>(o_.controller_period, o_.controller_cap,
                                                  o_.issue_calls, o_.issue_split);
  }
  std::unique_ptr<core::HybridScaler> MakeHybridScaler(
      const core::FunctionTraits& f) const override {
    return o_.hybrid ? o_.hybrid(f) : nullptr;
  }
  std::unique_ptr<core::PipelineScaler> MakePipelineScaler(
      const std::vector<core::FunctionTraits>& stages,
      const std::vector<core::PipelineStageTraits>& stage_traits,
      absl::Duration slo) const override {
    return o_.pipeline ? o_.pipeline(stages, stage_traits, slo) : nullptr;
  }
  bool work_conserving() const override { return o_.work_conserving; }
  core::StartTraits start_traits() const override { return o_.start; }

 private:
  FakePolicyOptions o_;
  FirstFitPlacement placement_;
};

}  // namespace sluice::sim::testing

#endif  // SLUICE_SIM_ENGINE_TESTING_FAKE_POLICY_H_
