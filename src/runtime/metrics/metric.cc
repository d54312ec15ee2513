// Counter, Gauge and Histogram; see metric.h.
#include "runtime/metrics/metric.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {
namespace {

// Lock-free floating-point add (a compare-and-swap loop, as atomic<double>::fetch_add does).
void AtomicAdd(std::atomic<double>& target, double delta) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + delta, std::memory_order_relaxed)) {
  }
}

}  // namespace

void Counter::Inc(double amount) {
  if (!(amount >= 0.0)) return;  // Also rejects NaN.
  AtomicAdd(value_, amount);
}

void Gauge::Add(double delta) { AtomicAdd(value_, delta); }

const std::vector<double>& DefaultLatencyBucketsSeconds() {
  static const std::vector<double>* const kBuckets = new std::vector<double>{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
      0.25,   0.5,   1.0,    2.5,   5.0,  10.0,  30.0, 60.0};
  return *kBuckets;
}

absl::Status ValidateBucketBounds(const std::vector<double>& bounds) {
  if (bounds.empty()) return absl::InvalidArgumentError("histogram bucket bounds are empty");
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram bucket bound ", i, " is not finite (+Inf is implicit)"));
    }
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram bucket bounds must strictly increase: bound ", i, " (", bounds[i],
          ") <= bound ", i - 1, " (", bounds[i - 1], ")"));
    }
  }
  return absl::OkStatus();
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // `le` is inclusive: the first bound >= value; past the end is the +Inf bucket.
  const size_t index =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[index].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, value);
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot snapshot;
  snapshot.cumulative_counts.resize(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative_counts[i] = running;
  }
  snapshot.count = running;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

}  // namespace sluice::runtime
