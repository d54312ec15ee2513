// Log buckets: bucket i >= 1 covers [kMinMs x r^(i-1), kMinMs x r^i), r = 1.01, so a bucket's
// representative is within 0.5 % of every latency in it.
#include "sim/engine/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace sluice::sim {
namespace {
constexpr double kMinMs = 1e-3;
constexpr double kRatio = 1.01;
const double kLogRatio = std::log(kRatio);
}  // namespace

size_t LatencyHistogram::BucketOf(double ms) {
  if (!(ms >= kMinMs))
    return 0;
  return 1 + static_cast<size_t>(std::log(ms / kMinMs) / kLogRatio);
}

double LatencyHistogram::BucketMs(size_t i) {
  if (i == 0)
    return 0;
  return kMinMs * std::exp((static_cast<double>(i) - 0.5) * kLogRatio);
}

void LatencyHistogram::Add(double ms, double weight) {
  if (!(weight > 0))
    return;
  const size_t b = BucketOf(ms);
  if (buckets_.empty()) {
    first_ = b;
  } else if (b < first_) {  // extend the range down
    buckets_.insert(buckets_.begin(), first_ - b, 0.0);
    first_ = b;
  }
  if (b - first_ >= buckets_.size())
    buckets_.resize(b - first_ + 1, 0.0);
  buckets_[b - first_] += weight;
  total_ += weight;
  sum_ms_ += weight * ms;
}

double MergedPercentile(const std::vector<double>& sorted, const LatencyHistogram& h, double p) {
  const double n = static_cast<double>(sorted.size()) + h.total();
  if (n <= 0)
    return 0;
  const double rank = std::max(1.0, std::ceil(p * n - 1e-9));
  // Walk both in ascending order; the first value whose cumulative weight reaches `rank`.
  double seen = 0;
  size_t k = 0;
  const std::vector<double>& b = h.buckets();
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i] <= 0)
      continue;
    const double v = LatencyHistogram::BucketMs(h.first_bucket() + i);
    for (; k < sorted.size() && sorted[k] <= v; ++k) {
      if (++seen >= rank)
        return sorted[k];
    }
    seen += b[i];
    if (seen >= rank - 1e-9)
      return v;
  }
  for (; k < sorted.size(); ++k) {
    if (++seen >= rank)
      return sorted[k];
  }
  return sorted.empty() ? LatencyHistogram::BucketMs(h.first_bucket() + b.size() - 1)
                        : sorted.back();
}

}  // namespace sluice::sim
