// HistogramScaler: INFless+'s horizontal scaler. Reactive scale-out (as ReactiveScaler) plus
// prior-knowledge pre-warming and keep-alive from the "Serverless in the Wild" hybrid histogram
// policy (IdleTimeHistogram), applied per instance level. Used by the "infless+", "infless-l"
// and "infless-r" policy sets (core/registry). One object per function; not thread-safe.
#ifndef SLUICE_CORE_BASELINES_HISTOGRAM_SCALER_H_
#define SLUICE_CORE_BASELINES_HISTOGRAM_SCALER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/baselines/idle_time_histogram.h"
#include "core/policy/horizontal.h"

namespace sluice::core {

struct HistogramScalerConfig {
  int min_instances = 0;
  int max_instances = 1 << 20;
  absl::Duration queue_drain = absl::Seconds(1);  // as ReactiveScalerConfig
  double capacity_rps = 0;                        // used when a sample carries none
  IdleHistogramConfig histogram;
  // Keep-alive while a level's histogram is not representative. ATC'20 falls back to a
  // keep-alive as long as the histogram range (4 h there); the default here is the same rule:
  // bins x bin_width = 240 s.
  absl::Duration fallback_keep_alive = absl::Seconds(240);
  // Reload this long before the histogram's pre-warm point, so the cold start is over when the
  // next use is due (container start + parameter load in the simulator's defaults: about 3 s).
  // A pre-warm window no longer than the lead unloads nothing: the level stays loaded.
  absl::Duration prewarm_lead = absl::Seconds(3);
};

// Levels: instance k (1-based) is *needed* at a sample when ceil((rps + queued / queue_drain_s)
// / capacity) >= k (ReactiveScaler's rule, same no-capacity fallback). Each level keeps the time
// t_k it was last needed and a histogram of its idle times: the gap between consecutive samples
// that needed it (consecutive samples count as one interval, ATC'20's per-invocation idle time
// at sample granularity). At time `now`, with d = now - t_k, level k is *warm* when
//   - d == 0 (needed at the latest sample: scale-out is immediate), or
//   - not representative:  d < fallback_keep_alive, or
//   - representative:      start <= d < keep_alive_until, where start = prewarm - prewarm_lead;
//                          start <= 0 means no unload (warm for every d < keep_alive_until).
// Desired(now) = number of warm levels, clamped to [min_instances, max_instances].
class HistogramScaler : public HorizontalScaler {
 public:
  // InvalidArgument unless 0 <= min <= max, queue_drain > 0, fallback_keep_alive >= 0,
  // prewarm_lead >= 0 (all finite) and the histogram config is valid.
  static absl::StatusOr<std::unique_ptr<HistogramScaler>> Create(
      const HistogramScalerConfig& config);

  std::string_view name() const override { return "hybrid-histogram"; }
  // Samples must come in non-decreasing `at`.
  void Observe(const LoadSample& sample) override;
  int Desired(absl::Time now) const override;
  // The next time after the latest sample or Desired(now) call at which some level's warmth
  // changes; InfiniteFuture when none will.
  absl::Time NextWakeup() const override;

  const HistogramScalerConfig& config() const { return config_; }
  int last_needed() const { return last_needed_; }
  // Levels ever needed (the most instances any sample needed).
  int levels() const { return static_cast<int>(levels_.size()); }
  // Level k's (1-based) histogram and current windows (tests and traces).
  const IdleTimeHistogram& histogram(int level) const { return levels_[level - 1].histogram; }
  IdleWindows windows(int level) const { return WindowsOf(levels_[level - 1]); }

 private:
  struct Level {
    explicit Level(const IdleHistogramConfig& c) : histogram(c) {}
    absl::Time last_needed = absl::InfinitePast();
    IdleTimeHistogram histogram;
    mutable IdleWindows windows;
    mutable bool dirty = true;  // windows need recomputing
  };
  // Offsets from t_k: warm in [from, until); `unload` when there is a cold gap (0, from).
  struct Span {
    absl::Duration from;
    absl::Duration until;
    bool unload = false;
  };

  explicit HistogramScaler(const HistogramScalerConfig& config) : config_(config) {}
  const IdleWindows& WindowsOf(const Level& level) const;
  Span SpanOf(const Level& level) const;
  bool Warm(const Level& level, absl::Time now) const;

  HistogramScalerConfig config_;
  std::vector<Level> levels_;
  int last_needed_ = 0;
  mutable absl::Time last_now_ = absl::InfinitePast();
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_HISTOGRAM_SCALER_H_
