// PriorityRateController.
#include "core/baselines/priority_rate_controller.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<PriorityRateController>> PriorityRateController::Create(
    const PriorityRateConfig& c, FunctionLookup function_of) {
  if (c.period <= absl::ZeroDuration() || c.period == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("tgs controller: period must be finite and > 0");
  }
  if (!(c.floor > 0 && c.floor <= c.initial_rate && c.initial_rate <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("tgs controller: need 0 < floor (", c.floor,
                                                   ") <= initial rate (", c.initial_rate,
                                                   ") <= 1"));
  }
  if (!(c.increase_step >= 0 && c.increase_step <= 1)) {
    return absl::InvalidArgumentError("tgs controller: increase step must be in [0, 1]");
  }
  if (!(c.backoff > 0 && c.backoff < 1)) {
    return absl::InvalidArgumentError("tgs controller: backoff must be in (0, 1)");
  }
  if (!(c.tolerance >= 0 && c.tolerance < 1) ||
      !(c.reference_decay >= 0 && c.reference_decay < 1)) {
    return absl::InvalidArgumentError(
        "tgs controller: tolerance and reference decay must be in [0, 1)");
  }
  return std::unique_ptr<PriorityRateController>(
      new PriorityRateController(c, std::move(function_of)));
}

void PriorityRateController::Adapt(int64_t production_blocks, int64_t opportunistic_blocks) {
  const double p = static_cast<double>(production_blocks);
  const bool interfered = production_blocks > 0 && opportunistic_blocks > 0 &&
                          p < (1.0 - config_.tolerance) * reference_;
  const bool rate_limited =
      issued_opportunistic_ > 0 && static_cast<double>(opportunistic_blocks) >=
                                       (1.0 - config_.tolerance) * issued_opportunistic_;
  if (interfered) {
    rate_ = std::max(config_.floor, rate_ * config_.backoff);
  } else if (rate_limited) {
    rate_ = std::min(1.0, rate_ + config_.increase_step);
  }
  reference_ = std::max(p, reference_ * (1.0 - config_.reference_decay));
}

size_t PriorityRateController::SelectProduction(std::span<const InstanceActivity> instances) {
  size_t lead = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    if (instances[i].slo_sensitive) {
      lead = i;
      break;
    }
  }
  production_flags_.assign(instances.size(), 0);
  production_flags_[lead] = 1;
  if (function_of_ != nullptr) {
    const std::optional<FunctionId> f = function_of_(instances[lead].instance);
    for (size_t i = 0; f.has_value() && i < instances.size(); ++i) {
      if (function_of_(instances[i].instance) == f)
        production_flags_[i] = 1;
    }
  }
  return lead;
}

void PriorityRateController::Issue(absl::Time now, int64_t max_tokens,
                                   std::span<const InstanceActivity> instances,
                                   std::span<int64_t> tokens_out) {
  SLUICE_CHECK(tokens_out.size() == instances.size());
  if (instances.empty())
    return;
  const size_t lead = SelectProduction(instances);
  if (production_ != instances[lead].instance) {
    production_ = instances[lead].instance;
    rate_ = config_.initial_rate;
    reference_ = 0;
    issued_opportunistic_ = 0;
  }
  int64_t production_blocks = 0, opportunistic_blocks = 0;
  size_t n = 0;  // opportunistic instances
  for (size_t i = 0; i < instances.size(); ++i) {
    const int64_t blocks = std::max<int64_t>(0, instances[i].blocks_launched);
    if (production_flags_[i]) {
      production_blocks += blocks;
    } else {
      opportunistic_blocks += blocks;
      ++n;
    }
  }
  Adapt(production_blocks, opportunistic_blocks);

  const int64_t each =
      n == 0 ? 0
             : std::max<int64_t>(1, static_cast<int64_t>(std::floor(
                                        rate_ * static_cast<double>(max_tokens) / n + 1e-9)));
  for (size_t i = 0; i < instances.size(); ++i) {
    tokens_out[i] = production_flags_[i] ? max_tokens : each;
  }
  issued_opportunistic_ = each * static_cast<int64_t>(n);
}

void PriorityRateController::Forget(InstanceId instance) {
  if (production_ == instance)
    production_.reset();
}

}  // namespace sluice::core
