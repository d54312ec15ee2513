// ProfiledLatencyModel: trial points -> core::TableLatencyModel, plus the fluid time-quota term.
#include "runtime/controller/profiled_latency.h"

#include <algorithm>
#include <vector>

#include "common/status.h"

namespace sluice::runtime {

absl::StatusOr<std::unique_ptr<ProfiledLatencyModel>> ProfiledLatencyModel::Create(
    const ProfileInfo& profile) {
  if (profile.points.empty())
    return std::unique_ptr<ProfiledLatencyModel>();
  std::vector<core::ProfilePoint> points;
  for (const TrialPoint& t : profile.points) {
    core::ProfilePoint p;
    p.batch = t.batch;
    p.sm_share = t.sm_share;
    p.time_quota = 1.0;
    p.latency_s = t.latency_ms / 1000.0;
    points.push_back(p);
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::TableLatencyModel> table,
                          core::TableLatencyModel::Create(points));
  return std::unique_ptr<ProfiledLatencyModel>(new ProfiledLatencyModel(std::move(table)));
}

absl::Duration ProfiledLatencyModel::BatchLatency(int batch, double sm_share,
                                                  double time_quota) const {
  const double q = time_quota >= 0.01 ? std::min(time_quota, 1.0) : 0.01;  // NaN -> 0.01
  return table_->BatchLatency(batch, sm_share, 1.0) / q;
}

absl::Duration ProfiledLatencyModel::IterationTime(double sm_share) const {
  return table_->IterationTime(sm_share);
}

}  // namespace sluice::runtime
