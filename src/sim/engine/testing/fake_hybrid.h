// Hybrid scalers for the engine's tests (core::HybridScaler): ScriptedHybridScaler returns
// scripted actions at scripted times and records what the engine showed it; StepHybridScaler is a
// small threshold rule (time-quota steps first, a new pod when every pod is at q = 1) used by the
// hybrid golden scenario. Not HAS-GPU's Algorithm 1 (that is core/hasgpu). Header-only; not
// thread-safe.
#ifndef SLUICE_SIM_ENGINE_TESTING_FAKE_HYBRID_H_
#define SLUICE_SIM_ENGINE_TESTING_FAKE_HYBRID_H_

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"

#include "core/policy/hybrid.h"
#include "core/registry/policy_registry.h"

namespace sluice::sim::testing {

// An action of `kind` on `instance` (kSetQuota, kRemove) with every other field defaulted.
inline core::ScalingAction MakeAction(core::ScalingAction::Kind kind,
                                      common::InstanceId instance = common::InstanceId()) {
  core::ScalingAction a;
  a.kind = kind;
  a.instance = instance;
  return a;
}

// Actions to return at the first Decide() at or after `at`.
struct HybridStep {
  absl::Time at;
  std::vector<core::ScalingAction> actions;
};

class ScriptedHybridScaler : public core::HybridScaler {
 public:
  explicit ScriptedHybridScaler(std::vector<HybridStep> steps) : steps_(std::move(steps)) {}
  std::string_view name() const override { return "scripted-hybrid"; }
  void Observe(const core::LoadSample& s) override { samples.push_back(s); }
  std::vector<core::ScalingAction> Decide(absl::Time now, const std::vector<core::PodView>& pods,
                                          const core::ClusterState&) override {
    calls.push_back(Call{now, pods});
    std::vector<core::ScalingAction> out;
    while (next_ < steps_.size() && steps_[next_].at <= now) {
      for (const core::ScalingAction& a : steps_[next_].actions)
        out.push_back(a);
      ++next_;
    }
    return out;
  }
  // The next scripted time, so the engine decides exactly then.
  absl::Time NextWakeup() const override {
    return next_ < steps_.size() ? steps_[next_].at : absl::InfiniteFuture();
  }

  struct Call {
    absl::Time now;
    std::vector<core::PodView> pods;
  };
  std::vector<core::LoadSample> samples;
  std::vector<Call> calls;

 private:
  std::vector<HybridStep> steps_;  // sorted by `at`
  size_t next_ = 0;
};

struct StepHybridOptions {
  double sm = 0.5;       // SM partition of every pod (request == limit)
  double q_min = 0.25;   // time quota of a new pod, and the floor of step-downs
  double q_step = 0.25;  // one vertical step
  double high = 0.8;     // scale up when rps > high x capacity
  double low = 0.5;      // scale down when rps <= low x capacity after the step
};

// One action per decision. Pod capacity = batch / BatchLatency(batch, s, q). Up: the pod with the
// lowest q < 1 (oldest among equals) gains q_step; with every pod at q = 1, a new pod at q_min on
// the first GPU with memory and sum_held + s x q_min <= 1. Down: the pod with the highest q
// (newest among equals) loses q_step, or, at q_min with other pods left, is removed.
class StepHybridScaler : public core::HybridScaler {
 public:
  StepHybridScaler(const core::FunctionTraits& traits, StepHybridOptions o)
      : traits_(traits), o_(o) {}
  std::string_view name() const override { return "step-hybrid"; }
  void Observe(const core::LoadSample& s) override { rps_ = s.rps; }
  std::vector<core::ScalingAction> Decide(absl::Time, const std::vector<core::PodView>& pods,
                                          const core::ClusterState& state) override {
    double total = 0;
    for (const core::PodView& p : pods)
      total += Capacity(p.batch, p.quota.time_quota);
    if (rps_ > o_.high * total)
      return Up(pods, state);
    return Down(pods, total);
  }

 private:
  double Capacity(int batch, double q) const {
    const double s = absl::ToDoubleSeconds(traits_.latency->BatchLatency(batch, o_.sm, q));
    return batch / s;
  }
  std::vector<core::ScalingAction> Up(const std::vector<core::PodView>& pods,
                                      const core::ClusterState& state) const {
    const core::PodView* lowest = nullptr;
    for (const core::PodView& p : pods) {
      const double q = p.quota.time_quota;
      if (q < 1 && (lowest == nullptr || q < lowest->quota.time_quota))
        lowest = &p;
    }
    if (lowest != nullptr) {
      core::ScalingAction a = MakeAction(core::ScalingAction::Kind::kSetQuota, lowest->instance);
      a.quota = lowest->quota;
      a.quota.time_quota = std::min(1.0, lowest->quota.time_quota + o_.q_step);
      return {a};
    }
    for (const core::GpuState& g : state.gpus()) {
      if (g.memory_free() >= traits_.memory && g.sum_held + o_.sm * o_.q_min <= 1 + 1e-9) {
        core::ScalingAction a = MakeAction(core::ScalingAction::Kind::kAdd);
        a.gpu = g.id;
        a.quota = core::SmQuota{o_.sm, o_.sm, o_.q_min};
        a.batch = traits_.max_batch;
        return {a};
      }
    }
    return {};
  }
  std::vector<core::ScalingAction> Down(const std::vector<core::PodView>& pods,
                                        double total) const {
    const core::PodView* highest = nullptr;
    for (const core::PodView& p : pods) {
      if (highest == nullptr || p.quota.time_quota >= highest->quota.time_quota)
        highest = &p;
    }
    if (highest == nullptr)
      return {};
    const double q = highest->quota.time_quota;
    const double now_cap = Capacity(highest->batch, q);
    if (q > o_.q_min + 1e-9) {
      const double q2 = std::max(o_.q_min, q - o_.q_step);
      if (rps_ > o_.low * (total - now_cap + Capacity(highest->batch, q2)))
        return {};
      core::ScalingAction a = MakeAction(core::ScalingAction::Kind::kSetQuota, highest->instance);
      a.quota = highest->quota;
      a.quota.time_quota = q2;
      return {a};
    }
    if (pods.size() < 2 || rps_ > o_.low * (total - now_cap))
      return {};
    return {MakeAction(core::ScalingAction::Kind::kRemove, highest->instance)};
  }

  core::FunctionTraits traits_;
  StepHybridOptions o_;
  double rps_ = 0;
};

}  // namespace sluice::sim::testing

#endif  // SLUICE_SIM_ENGINE_TESTING_FAKE_HYBRID_H_
