// Instance lifecycle checks. Illegal transitions are engine bugs, so they abort (SLUICE_CHECK)
// rather than return a Status: continuing would corrupt the cluster's books.
#include "sim/engine/instance.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::sim {

bool IsLegalTransition(InstanceState from, InstanceState to) {
  using S = InstanceState;
  switch (from) {
    case S::kCold:
      return to == S::kLoading;
    case S::kLoading:
      return to == S::kWarm || to == S::kDraining;
    case S::kWarm:
      return to == S::kDraining;
    case S::kDraining:
      return to == S::kGone;
    case S::kGone:
      return false;
  }
  return false;
}

absl::string_view StateName(InstanceState s) {
  switch (s) {
    case InstanceState::kCold:
      return "cold";
    case InstanceState::kLoading:
      return "loading";
    case InstanceState::kWarm:
      return "warm";
    case InstanceState::kDraining:
      return "draining";
    case InstanceState::kGone:
      return "gone";
  }
  return "?";
}

Instance::Instance(common::InstanceId id, int function, std::vector<common::GpuId> gpus)
    : id_(id), function_(function), gpus_(std::move(gpus)) {}

void Instance::TransitionTo(InstanceState to) {
  SLUICE_CHECK_MSG(IsLegalTransition(state_, to),
                   absl::StrCat("illegal instance transition ", StateName(state_), " -> ",
                                StateName(to), " (instance ", id_.value(), ")"));
  state_ = to;
}

}  // namespace sluice::sim
