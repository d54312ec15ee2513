// IdleTimeHistogram: the idle-time histogram of the "hybrid histogram" keep-alive policy of
// Shahrad et al., "Serverless in the Wild" (ATC'20), which INFless adopts for prior-knowledge
// pre-warming and keep-alive. Used by HistogramScaler (INFless+). Value type; not thread-safe.
#ifndef SLUICE_CORE_BASELINES_IDLE_TIME_HISTOGRAM_H_
#define SLUICE_CORE_BASELINES_IDLE_TIME_HISTOGRAM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace sluice::core {

// The histogram's knobs. ATC'20 uses 1-minute bins over 4 hours (240 bins), the 5th and 99th
// percentiles with a 10 % margin and a CV threshold of 2; Dilu's traces replay per-minute Azure
// counts once per second, so the defaults keep 240 bins of one sample interval (1 s).
struct IdleHistogramConfig {
  absl::Duration bin_width = absl::Seconds(1);
  int bins = 240;
  double prewarm_percentile = 5;      // head of the idle-time distribution
  double keep_alive_percentile = 99;  // tail
  double margin = 0.1;                // head shrinks and tail grows by this fraction
  double cv_threshold = 2;            // bin-count CV below this: not representative
  int min_observations = 10;          // fewer idle times: not representative
};
// InvalidArgument unless bin_width > 0 (finite), bins >= 1, 0 <= prewarm <= keep_alive
// percentiles <= 100, 0 <= margin < 1, cv_threshold >= 0, min_observations >= 1.
[[nodiscard]] absl::Status ValidateIdleHistogramConfig(const IdleHistogramConfig& config);

// What the histogram says about the next idle period, as offsets from the end of the last use.
// When representative: unload right after the use and reload at `prewarm`; stay loaded until
// `keep_alive_until` (ATC'20: pre-warm window = head, keep-alive window = tail - head). A zero
// `prewarm` means "stay loaded from the last use on".
struct IdleWindows {
  bool representative = false;  // false: the caller falls back to a fixed keep-alive
  absl::Duration prewarm = absl::ZeroDuration();
  absl::Duration keep_alive_until = absl::ZeroDuration();
};

class IdleTimeHistogram {
 public:
  // Precondition: ValidateIdleHistogramConfig(config) is OK.
  explicit IdleTimeHistogram(const IdleHistogramConfig& config);

  // Counts one idle time (negative values count as zero). Times of bins x bin_width or more
  // are out of bounds: they count as observations but sit in no bin.
  void Record(absl::Duration idle);

  int64_t observations() const { return observations_; }
  int64_t out_of_bounds() const { return observations_ - in_range_; }
  int64_t count(int bin) const { return counts_[bin]; }
  // Coefficient of variation (population) of the in-range bin counts; 0 with none in range.
  double BinCountCv() const;
  // The bin holding the p-th percentile observation (1-based rank ceil(p / 100 x n), at least
  // 1): the smallest b whose cumulative count reaches that rank; `bins` when it is out of
  // bounds. Precondition: observations() > 0.
  int PercentileBin(double p) const;

  // Representative when observations >= min_observations, CV >= cv_threshold and the
  // keep-alive percentile lies in range (ATC'20 hands out-of-bounds-heavy functions to ARIMA;
  // this baseline falls back to its fixed keep-alive instead). Then
  //   prewarm          = lower edge of the prewarm-percentile bin  x (1 - margin),
  //   keep_alive_until = upper edge of the keep-alive-percentile bin x (1 + margin).
  IdleWindows Windows() const;

 private:
  IdleHistogramConfig config_;
  std::vector<int64_t> counts_;
  int64_t observations_ = 0;
  int64_t in_range_ = 0;
  double sum_squares_ = 0;  // of in-range bin counts, kept incrementally
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_IDLE_TIME_HISTOGRAM_H_
