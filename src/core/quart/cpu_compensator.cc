// CPU compensation (see cpu_compensator.h).
#include "core/quart/cpu_compensator.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

#include "core/quart/mmc_model.h"

namespace sluice::core {
namespace {

// Large enough never to bind: the shortfall is computed unbounded, the caller's limits apply.
constexpr int kUnboundedReplicas = 1 << 20;

}  // namespace

absl::StatusOr<CpuCompensator> CpuCompensator::Create(const CpuCompensatorConfig& config,
                                                      std::vector<CpuStageProfile> profiles) {
  if (config.max_duration <= absl::ZeroDuration() ||
      config.max_duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("field 'max_duration': must be finite and > 0");
  }
  for (size_t i = 0; i < profiles.size(); ++i) {
    const CpuStageProfile& p = profiles[i];
    const std::string at = absl::StrCat("field 'profiles[", i, "].");
    if (!(p.cpu_slowdown >= 1) || !std::isfinite(p.cpu_slowdown)) {
      return absl::InvalidArgumentError(at + "cpu_slowdown': must be finite and >= 1");
    }
    if (p.cores_per_worker < 1) {
      return absl::InvalidArgumentError(at + "cores_per_worker': must be >= 1");
    }
    if (p.max_workers < 0)
      return absl::InvalidArgumentError(at + "max_workers': must be >= 0");
  }
  return CpuCompensator(config, std::move(profiles));
}

CpuAction CpuCompensator::DecideStage(int i, const CpuStageView& v, int& free_cores,
                                      absl::Time now) {
  const CpuStageProfile& p = profiles_[i];
  StageState& st = states_[i];
  CpuAction a;
  a.stage = i;
  const int needed =
      ReplicasForTarget(v.arrival_rps, v.service_rps, v.target, kUnboundedReplicas, v.arrival_cv);
  const int short_by = std::max(0, needed - v.ready_replicas);
  a.gpu_replicas_short = short_by;
  if (short_by == 0)
    st.state = CpuCompensationState::kIdle;
  if (st.state == CpuCompensationState::kCompensating && now - st.since >= config_.max_duration) {
    st.state = CpuCompensationState::kExhausted;
  }
  const bool cpu_fast_enough =
      v.service_rps > 0 && absl::Seconds(p.cpu_slowdown / v.service_rps) <= v.target;
  int wanted = 0;
  if (short_by > 0 && cpu_fast_enough && st.state != CpuCompensationState::kExhausted) {
    const int affordable = v.cpu_workers + free_cores / p.cores_per_worker;
    const double cover = std::ceil(short_by * p.cpu_slowdown - 1e-9);  // may exceed int
    wanted = static_cast<int>(std::min<double>(cover, std::min(p.max_workers, affordable)));
  }
  if (wanted > 0 && st.state == CpuCompensationState::kIdle) {
    st.state = CpuCompensationState::kCompensating;
    st.since = now;
  }
  a.worker_delta = wanted - v.cpu_workers;
  if (a.worker_delta > 0)
    free_cores -= a.worker_delta * p.cores_per_worker;
  // Escalate when the workers the stage may run leave it short.
  a.escalate = short_by > 0 && wanted / p.cpu_slowdown + 1e-9 < short_by;
  return a;
}

std::vector<CpuAction> CpuCompensator::Decide(const std::vector<CpuStageView>& views,
                                              int free_cores, absl::Time now) {
  std::vector<CpuAction> out;
  int free = std::max(0, free_cores);
  for (size_t i = 0; i < views.size() && i < profiles_.size(); ++i) {
    CpuAction a = DecideStage(static_cast<int>(i), views[i], free, now);
    if (a.worker_delta != 0 || a.escalate)
      out.push_back(a);
  }
  return out;
}

absl::Time CpuCompensator::NextWakeup() const {
  absl::Time t = absl::InfiniteFuture();
  for (const StageState& s : states_) {
    if (s.state == CpuCompensationState::kCompensating)
      t = std::min(t, s.since + config_.max_duration);
  }
  return t;
}

}  // namespace sluice::core
