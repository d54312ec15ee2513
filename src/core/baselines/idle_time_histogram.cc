// IdleTimeHistogram.
#include "core/baselines/idle_time_histogram.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {

absl::Status ValidateIdleHistogramConfig(const IdleHistogramConfig& c) {
  if (c.bin_width <= absl::ZeroDuration() || c.bin_width == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("idle histogram: bin width must be finite and > 0");
  }
  if (c.bins < 1)
    return absl::InvalidArgumentError("idle histogram: need at least one bin");
  if (!(c.prewarm_percentile >= 0 && c.prewarm_percentile <= c.keep_alive_percentile &&
        c.keep_alive_percentile <= 100)) {
    return absl::InvalidArgumentError(
        absl::StrCat("idle histogram: need 0 <= prewarm percentile (", c.prewarm_percentile,
                     ") <= keep-alive percentile (", c.keep_alive_percentile, ") <= 100"));
  }
  if (!(c.margin >= 0 && c.margin < 1)) {
    return absl::InvalidArgumentError("idle histogram: margin must be in [0, 1)");
  }
  if (!(c.cv_threshold >= 0) || !std::isfinite(c.cv_threshold)) {
    return absl::InvalidArgumentError("idle histogram: CV threshold must be finite and >= 0");
  }
  if (c.min_observations < 1) {
    return absl::InvalidArgumentError("idle histogram: min observations must be >= 1");
  }
  return absl::OkStatus();
}

IdleTimeHistogram::IdleTimeHistogram(const IdleHistogramConfig& config)
    : config_(config), counts_(config.bins, 0) {}

void IdleTimeHistogram::Record(absl::Duration idle) {
  ++observations_;
  idle = std::max(idle, absl::ZeroDuration());
  // Integer division of durations floors, so a bin holds [b, b + 1) x bin_width.
  const int64_t bin = idle / config_.bin_width;
  if (bin >= config_.bins)
    return;
  int64_t& c = counts_[bin];
  sum_squares_ += static_cast<double>(2 * c + 1);  // (c + 1)^2 - c^2
  ++c;
  ++in_range_;
}

double IdleTimeHistogram::BinCountCv() const {
  if (in_range_ == 0)
    return 0;
  const double n = static_cast<double>(config_.bins);
  const double mean = static_cast<double>(in_range_) / n;
  const double variance = std::max(0.0, sum_squares_ / n - mean * mean);
  return std::sqrt(variance) / mean;
}

int IdleTimeHistogram::PercentileBin(double p) const {
  const double exact = p / 100.0 * static_cast<double>(observations_);
  // The small slack keeps 0.99 x 100 (= 98.99999999999999) at rank 99.
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(exact - 1e-9)));
  int64_t seen = 0;
  for (int b = 0; b < config_.bins; ++b) {
    seen += counts_[b];
    if (seen >= rank)
      return b;
  }
  return config_.bins;
}

IdleWindows IdleTimeHistogram::Windows() const {
  IdleWindows w;
  if (observations_ < config_.min_observations || BinCountCv() < config_.cv_threshold)
    return w;
  const int tail = PercentileBin(config_.keep_alive_percentile);
  if (tail >= config_.bins)
    return w;
  const int head = PercentileBin(config_.prewarm_percentile);
  w.representative = true;
  w.prewarm = config_.bin_width * head * (1.0 - config_.margin);
  w.keep_alive_until = config_.bin_width * (tail + 1) * (1.0 + config_.margin);
  return w;
}

}  // namespace sluice::core
