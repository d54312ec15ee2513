// Metric cells of the Prometheus registry: Counter, Gauge and Histogram, one labelled series each.
// The gateway, agent and controller update them on hot paths; registry.h owns and renders them.
// Thread safety: every update and read is a lock-free atomic operation (no mutex, no allocation),
// safe from any number of threads. A Histogram snapshot taken while observations race may have a
// `_sum` that lags its bucket counts by the in-flight observations; counts are never lost.
#ifndef SLUICE_RUNTIME_METRICS_METRIC_H_
#define SLUICE_RUNTIME_METRICS_METRIC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace sluice::runtime {

// A monotone counter. Value starts at 0 and only grows.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `amount`. Negative or NaN amounts would break monotonicity and are ignored.
  void Inc(double amount = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that can go up and down (queue length, instances, SM share).
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta);
  void Inc() { Add(1.0); }
  void Dec() { Add(-1.0); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Upper bounds (seconds) for request latency histograms: 0.5 ms .. 60 s, roughly 2-2.5x apart.
const std::vector<double>& DefaultLatencyBucketsSeconds();

// OK iff `bounds` is non-empty, finite and strictly increasing; otherwise InvalidArgument.
[[nodiscard]] absl::Status ValidateBucketBounds(const std::vector<double>& bounds);

// A histogram with fixed upper bounds (`le`, inclusive) plus an implicit +Inf bucket.
class Histogram {
 public:
  // Point-in-time copy; `cumulative_counts` has bounds().size() + 1 entries, the last is +Inf.
  struct Snapshot {
    std::vector<uint64_t> cumulative_counts;
    double sum = 0.0;
    uint64_t count = 0;
  };

  // Precondition: ValidateBucketBounds(bounds).ok() (the registry checks it at creation).
  explicit Histogram(std::vector<double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records one observation in base units (seconds for latency). NaN is ignored.
  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  Snapshot Take() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // Per bucket, not cumulative; +Inf last.
  std::atomic<double> sum_{0.0};
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_METRICS_METRIC_H_
