// Bucketed series replay and per-request trace replay (MakeBucketSource, MakeTraceSource in
// sources.h).
#include <algorithm>
#include <cmath>
#include <optional>

#include "common/status.h"
#include "sim/workload/random.h"
#include "sim/workload/sources.h"

namespace sluice::sim {
namespace {

class BucketSource final : public ArrivalSource {
 public:
  BucketSource(std::vector<double> values, double scale, absl::Duration width, ArrivalSpread spread,
               uint64_t seed, const ReplayWindow& window)
      : values_(std::move(values)),
        scale_(scale),
        width_s_(absl::ToDoubleSeconds(width)),
        spread_(spread),
        window_(window),
        rng_(seed),
        end_(window.end()) {
    SLUICE_CHECK(scale_ >= 0 && width_s_ > 0);
    next_bucket_ = static_cast<size_t>(std::max(0.0, std::floor(window_.offset_s / width_s_)));
  }

  std::optional<Arrival> Next() override {
    while (!done_) {
      if (pos_ == pending_.size()) {
        if (!FillNextBucket()) {
          break;
        }
        continue;
      }
      const double t = pending_[pos_++];
      if (t < window_.offset_s) {
        continue;
      }
      const absl::Time at = window_.ToTime(t);
      if (at >= end_) {
        break;
      }
      return Arrival{.at = at};
    }
    done_ = true;
    return std::nullopt;
  }

  double MeanRate() const override {
    const double from = window_.offset_s;
    const double to = std::min(from + window_.horizon_s(), width_s_ * values_.size());
    if (to <= from) {
      return 0;
    }
    double expected = 0;
    for (size_t b = 0; b < values_.size(); ++b) {
      const double lo = std::max(from, b * width_s_), hi = std::min(to, (b + 1) * width_s_);
      if (hi > lo) {
        expected += Count(b) * (hi - lo) / width_s_;
      }
    }
    return expected / (to - from);
  }

 private:
  // Requests in bucket b (the expectation for kPoisson).
  double Count(size_t b) const {
    const double x = values_[b] * scale_;
    return spread_ == ArrivalSpread::kPoisson ? x : std::round(x);
  }

  // Fills pending_ with the sorted source times of the next bucket; false when none is left.
  bool FillNextBucket() {
    const size_t b = next_bucket_++;
    if (b >= values_.size() || window_.ToTime(b * width_s_) >= end_) {
      return false;
    }
    pending_.clear();
    pos_ = 0;
    const double lo = b * width_s_;
    const double n = Count(b);
    switch (spread_) {
      case ArrivalSpread::kEven:
        for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
          pending_.push_back(lo + (i + 0.5) * width_s_ / n);
        }
        break;
      case ArrivalSpread::kUniform:
        for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
          pending_.push_back(lo + rng_.Uniform() * width_s_);
        }
        std::sort(pending_.begin(), pending_.end());
        break;
      case ArrivalSpread::kPoisson:
        // A homogeneous Poisson process at n / width inside the bucket, so the count is
        // Poisson(n) and the times are uniform given the count.
        if (n <= 0) {
          break;
        }
        for (double t = lo + rng_.Exponential(width_s_ / n); t < lo + width_s_;) {
          pending_.push_back(t);
          t += rng_.Exponential(width_s_ / n);
        }
        break;
    }
    return true;
  }

  const std::vector<double> values_;
  const double scale_;
  const double width_s_;
  const ArrivalSpread spread_;
  const ReplayWindow window_;
  Rng rng_;
  const absl::Time end_;
  size_t next_bucket_ = 0;
  std::vector<double> pending_;  // source seconds of the current bucket's arrivals, sorted
  size_t pos_ = 0;               // next index into pending_
  bool done_ = false;
};

class TraceSource final : public ArrivalSource {
 public:
  TraceSource(std::vector<TraceRequest> rows, double time_scale, const ReplayWindow& window)
      : rows_(std::move(rows)), time_scale_(time_scale), window_(window), end_(window.end()) {
    SLUICE_CHECK(time_scale_ > 0);
    pos_ = FirstAtOrAfter(window_.offset_s);
  }

  std::optional<Arrival> Next() override {
    if (pos_ >= rows_.size()) {
      return std::nullopt;
    }
    const TraceRequest& r = rows_[pos_];
    const absl::Time at = window_.ToTime(r.at_s / time_scale_);
    if (at >= end_) {
      pos_ = rows_.size();
      return std::nullopt;
    }
    ++pos_;
    return Arrival{.at = at, .prompt_tokens = r.prompt_tokens, .output_tokens = r.output_tokens};
  }

  double MeanRate() const override {
    if (rows_.empty()) {
      return 0;
    }
    const double from = window_.offset_s;
    const double last = rows_.back().at_s / time_scale_;
    const double horizon_end = from + window_.horizon_s();
    const double to = std::min(horizon_end, last);
    if (to <= from) {
      return 0;
    }
    // The horizon is half-open; a trace that ends inside it counts its last row.
    const size_t end = horizon_end > last ? rows_.size() : FirstAtOrAfter(horizon_end);
    return (end - FirstAtOrAfter(from)) / (to - from);
  }

 private:
  // Index of the first row whose replay second is >= s.
  size_t FirstAtOrAfter(double s) const {
    const auto it = std::lower_bound(
        rows_.begin(), rows_.end(), s,
        [this](const TraceRequest& r, double v) { return r.at_s / time_scale_ < v; });
    return static_cast<size_t>(it - rows_.begin());
  }

  const std::vector<TraceRequest> rows_;
  const double time_scale_;
  const ReplayWindow window_;
  const absl::Time end_;
  size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<ArrivalSource> MakeBucketSource(std::vector<double> values, double scale,
                                                absl::Duration width, ArrivalSpread spread,
                                                uint64_t seed, const ReplayWindow& window) {
  return std::make_unique<BucketSource>(std::move(values), scale, width, spread, seed, window);
}

std::unique_ptr<ArrivalSource> MakeTraceSource(std::vector<TraceRequest> rows, double time_scale,
                                               const ReplayWindow& window) {
  return std::make_unique<TraceSource>(std::move(rows), time_scale, window);
}

}  // namespace sluice::sim
