// CocktailScaler: the autoscaler of Cocktail (Gunasekaran et al., NSDI'22), applied per stage
// function as the QUART paper did (§8.1), as a HorizontalScaler. Reconstructed from the paper's
// public description (docs/quart.md, "Cocktail", lists every choice): a proactive part that
// provisions for a load predictor's forecast of the next horizon (Cocktail uses a DeepAR
// model; here Holt's linear-trend exponential smoothing of per-interval peak rates, no training
// framework in the core), over-provisioned by a fixed fraction, and a reactive fallback that
// scales out at once when the observed load (plus queue) exceeds the deployed capacity, i.e. when
// the forecast missed. Instances above what either part needs leave after `keep_alive`. Used by
// core/registry's cocktail set. One object per function; not thread-safe.
#ifndef SLUICE_CORE_BASELINES_COCKTAIL_SCALER_H_
#define SLUICE_CORE_BASELINES_COCKTAIL_SCALER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/horizontal.h"

namespace sluice::core {

// Defaults (ours unless noted; docs/quart.md):
//   interval 5 s: the predictor's step; one forecast per interval from its peak 1 s rate.
//   horizon 10 s: provision for the forecast peak this far ahead (about a stage's cold start).
//   alpha 0.5, beta 0.3: Holt's level and trend weights.
//   over_provision 0.1: 10 % above the forecast (headroom for the forecast's error).
//   keep_alive 60 s: surplus instances leave a minute after they were last needed.
struct CocktailConfig {
  int min_instances = 0;
  int max_instances = 1 << 20;
  double capacity_rps = 0;  // per instance when a sample carries none
  absl::Duration interval = absl::Seconds(5);
  absl::Duration horizon = absl::Seconds(10);
  double alpha = 0.5;           // (0, 1]
  double beta = 0.3;            // [0, 1]
  double over_provision = 0.1;  // >= 0
  absl::Duration keep_alive = absl::Seconds(60);
  absl::Duration queue_drain = absl::Seconds(1);
};

// Each sample: reactive = ceil((rps + queued / drain) / capacity); at the end of each interval
// the interval's peak rate updates Holt's level L and trend T, and the forecast
// F = L + T x horizon / interval (0 below 0.001 rps) sets proactive = ceil(F x (1 + over_provision)
// / capacity). Level k is needed at a sample when max(reactive, proactive) >= k; Desired(now)
// counts the levels needed within keep_alive (as ReactiveScaler), clamped to [min, max].
class CocktailScaler final : public HorizontalScaler {
 public:
  // InvalidArgument naming the field for out-of-range values.
  static absl::StatusOr<std::unique_ptr<CocktailScaler>> Create(const CocktailConfig& config);

  std::string_view name() const override { return "cocktail"; }
  // Samples in non-decreasing `at`.
  void Observe(const LoadSample& sample) override;
  int Desired(absl::Time now) const override;
  // When the highest live level above min_instances expires (call Desired(now) first).
  absl::Time NextWakeup() const override;

  double forecast_rps() const { return forecast_; }
  int proactive() const { return proactive_; }
  int reactive() const { return reactive_; }

 private:
  explicit CocktailScaler(const CocktailConfig& c) : config_(c) {}
  void EndInterval(double capacity);

  CocktailConfig config_;
  absl::Time interval_start_ = absl::InfinitePast();
  double interval_peak_ = 0;
  bool have_level_ = false;
  double level_ = 0, trend_ = 0, forecast_ = 0;
  int proactive_ = 0, reactive_ = 0;
  mutable std::vector<absl::Time> last_needed_at_;  // per level, non-increasing
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_COCKTAIL_SCALER_H_
