// ProfiledLatencyModel: the latency of (batch, SM share, time quota) the controller gives a
// function's policies (core::FunctionTraits::latency; HAS-GPU's hybrid scaler asks it), built
// from that function's own profiling trials. Used by ControllerCore. Thread-compatible:
// immutable after construction.
#ifndef SLUICE_RUNTIME_CONTROLLER_PROFILED_LATENCY_H_
#define SLUICE_RUNTIME_CONTROLLER_PROFILED_LATENCY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/perf/table_latency_model.h"
#include "runtime/controller/function_record.h"

namespace sluice::runtime {

// Spatial part: a core::TableLatencyModel over the trial points (all at time quota 1), with the
// table's interpolation and extrapolation rules (trilinear inside, compute-bound below the
// smallest share, throughput-saturated above the largest batch). Temporal part: a trial cannot
// set a time quota today, so q scales the time-1 latency as a fluid time slice would,
// t(b, s, q) = t(b, s, 1) / q (q clamped to [0.01, 1]): the instance runs a fraction q of every
// window. This ignores the window granularity (latency below one window is underestimated at
// small q); see the README's "Known limits".
class ProfiledLatencyModel final : public core::LatencyModel {
 public:
  // Null when the profile has no trial points (records written before they were kept);
  // InvalidArgument when a point is not a valid table point.
  static absl::StatusOr<std::unique_ptr<ProfiledLatencyModel>> Create(const ProfileInfo& profile);

  absl::Duration BatchLatency(int batch, double sm_share, double time_quota = 1.0) const override;
  absl::Duration IterationTime(double sm_share) const override;

 private:
  explicit ProfiledLatencyModel(std::unique_ptr<core::TableLatencyModel> table)
      : table_(std::move(table)) {}
  std::unique_ptr<core::TableLatencyModel> table_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_PROFILED_LATENCY_H_
