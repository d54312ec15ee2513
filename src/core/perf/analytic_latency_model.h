// AnalyticLatencyModel: a closed-form LatencyModel, saturating in SM share and batch-dependent,
// with a time-slice (quota) term and an LLM prefill term. The built-in catalogue (PerfModel::
// BuiltIn) ships fitted AnalyticParams; perf_fit.h fits them to profile tables.
// Thread-compatible: immutable after construction.
#ifndef SLUICE_CORE_PERF_ANALYTIC_LATENCY_MODEL_H_
#define SLUICE_CORE_PERF_ANALYTIC_LATENCY_MODEL_H_

#include <array>

#include "core/perf/perf_model.h"

namespace sluice::core {

// Spatial part, for batch b >= 1 and SM share s in (0, 1] (docs/perf-model.md):
//   t_sat(b) = t0 + t1 * b^gamma                  latency once the batch has all the SMs it uses
//   s_sat(b) = s0 * b^beta                        SM share at which the batch saturates
//   t(b, s)  = t_sat(b) * (1 + (s_sat(b) / s)^(p * alpha))^(1 / p)
// i.e. a smoothed t_sat(b) * max(1, (s_sat(b)/s)^alpha): flat above saturation, a power law below
// it, with p setting how sharp the knee is. s_sat may exceed 1 (never saturates on one GPU).
struct SpatialParams {
  double t0_s = 0.01;
  double t1_s = 0.001;
  double gamma = 1.0;
  double s0 = 0.1;
  double beta = 0.5;
  double alpha = 1.0;
  double p = 4.0;
};

// Time slicing (HAS-GPU / FaST-GShare, fitted to the RaPP V100 table), for quota q in (0, 1]:
//   w(q)       = W * (1/q - 1)^eta,   W = omega * t_ref^delta  (seconds; t_ref = t(1, 1) in s)
//   t(b, s, q) = (t(b, s)^r + w(q)^r)^(1/r)
// i.e. a smoothed max of the unsliced latency and a window term that depends on the model (via
// its batch-1 full-GPU latency) but not on batch or share. At q = 1, w = 0 and t(b, s, 1) = t(b,
// s).
struct QuotaParams {
  double omega = 1.0;
  double delta = 1.0;
  double eta = 1.0;
  double r = 2.0;
};

struct AnalyticParams {
  SpatialParams spatial;
  QuotaParams quota;
  // LLM prefill: PrefillLatency(P, s) = t(1, s) + P * prefill_per_token_s / s. The per-token
  // cost is compute-bound, hence the 1/s. Zero for models without a prefill phase.
  double prefill_per_token_s = 0;
  // IterationTime(s) = training_factor * t(training_batch, s): forward plus a backward pass
  // costing about twice the forward.
  int training_batch = 32;
  double training_factor = 3.0;
};

// `params` with every time constant (t0, t1, prefill per token) multiplied by k > 0: the same
// model on a GPU k times slower. Used to move a fit from one profile's GPU to another's.
AnalyticParams ScaledInTime(const AnalyticParams& params, double k);

class AnalyticLatencyModel : public LatencyModel {
 public:
  // Parameters are used as given; callers (BuiltIn, the fitter) pass positive time constants,
  // positive shares and exponents, gamma, beta >= 0 (which make the model monotone).
  explicit AnalyticLatencyModel(const AnalyticParams& params);

  absl::Duration BatchLatency(int batch, double sm_share, double time_quota = 1.0) const override;
  absl::Duration IterationTime(double sm_share) const override;
  absl::Duration PrefillLatency(int prompt_tokens, double sm_share) const override;

  // The same quantities in seconds, for fitting.
  double LatencySeconds(int batch, double sm_share, double time_quota = 1.0) const;
  const AnalyticParams& params() const { return params_; }
  // The quota window W (seconds) this model uses.
  double quota_window_s() const { return window_s_; }

 private:
  static constexpr int kCachedBatches = 256;
  double TSat(int batch) const;
  double SSat(int batch) const;
  double Spatial(int batch, double sm_share) const;

  AnalyticParams params_;
  double window_s_ = 0;
  // t_sat(b) and s_sat(b)^(p*alpha) for b in [1, kCachedBatches], so evaluation needs few pow()s.
  std::array<double, kCachedBatches + 1> t_sat_{};
  std::array<double, kCachedBatches + 1> s_sat_pa_{};
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_ANALYTIC_LATENCY_MODEL_H_
