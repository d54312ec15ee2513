#include "core/perf/analytic_latency_model.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {
namespace {

constexpr double kMinShare = 0.01;

double ClampShare(double x) {
  if (!(x >= kMinShare))
    return kMinShare;  // also catches NaN
  return std::min(x, 1.0);
}

}  // namespace

AnalyticParams ScaledInTime(const AnalyticParams& params, double k) {
  AnalyticParams p = params;
  p.spatial.t0_s *= k;
  p.spatial.t1_s *= k;
  p.prefill_per_token_s *= k;
  return p;
}

AnalyticLatencyModel::AnalyticLatencyModel(const AnalyticParams& params) : params_(params) {
  const SpatialParams& sp = params_.spatial;
  for (int b = 1; b <= kCachedBatches; ++b) {
    t_sat_[b] = sp.t0_s + sp.t1_s * std::pow(b, sp.gamma);
    s_sat_pa_[b] = std::pow(sp.s0 * std::pow(b, sp.beta), sp.p * sp.alpha);
  }
  const QuotaParams& q = params_.quota;
  window_s_ = q.omega * std::pow(Spatial(1, 1.0), q.delta);
}

double AnalyticLatencyModel::TSat(int batch) const {
  if (batch <= kCachedBatches)
    return t_sat_[batch];
  const SpatialParams& sp = params_.spatial;
  return sp.t0_s + sp.t1_s * std::pow(batch, sp.gamma);
}

double AnalyticLatencyModel::SSat(int batch) const {
  if (batch <= kCachedBatches)
    return s_sat_pa_[batch];
  const SpatialParams& sp = params_.spatial;
  return std::pow(sp.s0 * std::pow(batch, sp.beta), sp.p * sp.alpha);
}

// t_sat(b) * (1 + (s_sat/s)^(p alpha))^(1/p); s^(p alpha) is the only batch-independent pow.
double AnalyticLatencyModel::Spatial(int batch, double sm_share) const {
  batch = std::max(batch, 1);
  const SpatialParams& sp = params_.spatial;
  double ratio = SSat(batch) / std::pow(sm_share, sp.p * sp.alpha);
  return TSat(batch) * std::pow(1.0 + ratio, 1.0 / sp.p);
}

double AnalyticLatencyModel::LatencySeconds(int batch, double sm_share, double time_quota) const {
  double t = Spatial(batch, ClampShare(sm_share));
  double q = ClampShare(time_quota);
  if (q >= 1.0)
    return t;
  const QuotaParams& qp = params_.quota;
  double w = window_s_ * std::pow(1.0 / q - 1.0, qp.eta);
  // (t^r + w^r)^(1/r) = hi * (1 + (lo/hi)^r)^(1/r): no overflow for large r, one pow fewer.
  double hi = std::max(t, w), lo = std::min(t, w);
  return hi * std::pow(1.0 + std::pow(lo / hi, qp.r), 1.0 / qp.r);
}

absl::Duration AnalyticLatencyModel::BatchLatency(int batch, double sm_share,
                                                  double time_quota) const {
  return absl::Seconds(LatencySeconds(batch, sm_share, time_quota));
}

absl::Duration AnalyticLatencyModel::IterationTime(double sm_share) const {
  return absl::Seconds(params_.training_factor *
                       Spatial(params_.training_batch, ClampShare(sm_share)));
}

absl::Duration AnalyticLatencyModel::PrefillLatency(int prompt_tokens, double sm_share) const {
  if (params_.prefill_per_token_s <= 0)
    return absl::ZeroDuration();
  double s = ClampShare(sm_share);
  double tokens = std::max(prompt_tokens, 0);
  return absl::Seconds(Spatial(1, s) + tokens * params_.prefill_per_token_s / s);
}

}  // namespace sluice::core
