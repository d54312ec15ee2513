// Latencies stored as weighted counts in log-spaced buckets (1 % wide, from 1 us), for the
// engine's fluid mode, whose windows report a latency distribution rather than single requests.
// FunctionMetrics merges it with the exact latencies for percentiles. Not thread-safe.
#ifndef SLUICE_SIM_ENGINE_LATENCY_HISTOGRAM_H_
#define SLUICE_SIM_ENGINE_LATENCY_HISTOGRAM_H_

#include <cstddef>
#include <vector>

namespace sluice::sim {

class LatencyHistogram {
 public:
  // Adds `weight` (>= 0, may be fractional) requests of latency `ms` (>= 0).
  void Add(double ms, double weight);
  bool empty() const { return total_ <= 0; }
  double total() const { return total_; }
  double sum_ms() const { return sum_ms_; }
  // Representative latency of bucket i (its geometric centre; bucket 0 holds everything < 1 us).
  static double BucketMs(size_t i);
  static size_t BucketOf(double ms);
  // Weights of buckets first_bucket() .. first_bucket() + buckets().size() - 1 (the range used
  // so far: a function's latencies span a few hundred of the ~2,000 buckets, and thousands of
  // fluid functions each keep one).
  size_t first_bucket() const { return first_; }
  const std::vector<double>& buckets() const { return buckets_; }

 private:
  std::vector<double> buckets_;
  size_t first_ = 0;
  double total_ = 0;
  double sum_ms_ = 0;
};

// Nearest-rank percentile p in (0, 1] of the union of `sorted` (exact latencies, ascending) and
// `h`; rank ceil(p x n) over n = sorted.size() + h.total(). 0 when both are empty.
double MergedPercentile(const std::vector<double>& sorted, const LatencyHistogram& h, double p);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_LATENCY_HISTOGRAM_H_
