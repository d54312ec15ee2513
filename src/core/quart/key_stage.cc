// Key-stage detection (see key_stage.h).
#include "core/quart/key_stage.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {
namespace {

absl::Duration ServiceTime(double service_rps) {
  return service_rps > 0 && std::isfinite(service_rps) ? absl::Seconds(1.0 / service_rps)
                                                       : absl::ZeroDuration();
}

absl::Duration CombinedWait(const StageLoad& s, const MmcResult& m, const KeyStageConfig& c) {
  const absl::Duration cap = c.unstable_wait_cap;
  const absl::Duration model = std::min(m.mean_wait, cap);
  absl::Duration measured =
      std::max(absl::ZeroDuration(), s.measured_latency - ServiceTime(s.service_rps));
  const double capacity = std::max(0, s.replicas) * std::max(0.0, s.service_rps);
  const double queue = std::isfinite(s.queue_length) ? std::max(0.0, s.queue_length) : 0.0;
  absl::Duration drain = absl::ZeroDuration();
  if (queue > 0)
    drain = capacity > 0 ? absl::Seconds(queue / capacity) : cap;
  measured = std::min(std::max(measured, drain), cap);
  return c.model_weight * model + (1.0 - c.model_weight) * measured;
}

}  // namespace

absl::Status ValidateKeyStageConfig(const KeyStageConfig& c) {
  if (!(c.model_weight >= 0 && c.model_weight <= 1)) {
    return absl::InvalidArgumentError("field 'model_weight': must be in [0, 1]");
  }
  if (c.unstable_wait_cap <= absl::ZeroDuration() ||
      c.unstable_wait_cap == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("field 'unstable_wait_cap': must be finite and > 0");
  }
  if (!(c.key_share_factor >= 1) || !std::isfinite(c.key_share_factor)) {
    return absl::InvalidArgumentError("field 'key_share_factor': must be finite and >= 1");
  }
  return absl::OkStatus();
}

std::vector<StageEstimate> EstimateStages(const std::vector<StageLoad>& stages,
                                          const KeyStageConfig& config) {
  std::vector<StageEstimate> out(stages.size());
  absl::Duration total = absl::ZeroDuration();
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageLoad& s = stages[i];
    StageEstimate& e = out[i];
    e.model = MmcQueue(s.arrival_rps, s.service_rps, s.replicas);
    e.wait = CombinedWait(s, e.model, config);
    e.latency = e.wait + ServiceTime(s.service_rps);
    total += e.latency;
  }
  if (total <= absl::ZeroDuration())
    return out;
  const double threshold = config.key_share_factor / static_cast<double>(stages.size());
  for (StageEstimate& e : out) {
    e.share = absl::FDivDuration(e.latency, total);
    // A single-stage pipeline has share 1 >= 1.5 / 1 only if the factor is 1; it is never a
    // bottleneck relative to itself, which is the intent.
    e.key = e.share >= threshold && e.wait > absl::ZeroDuration();
  }
  return out;
}

std::vector<int> KeyStages(const std::vector<StageEstimate>& estimates) {
  std::vector<int> keys;
  for (size_t i = 0; i < estimates.size(); ++i) {
    if (estimates[i].key)
      keys.push_back(static_cast<int>(i));
  }
  return keys;
}

}  // namespace sluice::core
