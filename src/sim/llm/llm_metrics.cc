// Weighted percentiles for the LLM simulator's latency samples.
#include "sim/llm/llm_metrics.h"

#include <algorithm>

namespace sluice::sim::llm {

void WeightedSamples::Add(double value_ms, int64_t weight) {
  if (weight <= 0) return;
  samples_.emplace_back(static_cast<float>(value_ms), weight);
  count_ += weight;
  sum_ += value_ms * static_cast<double>(weight);
  sorted_ = false;
}

double WeightedSamples::Mean() const {
  return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_);
}

double WeightedSamples::Percentile(double p) {
  if (count_ == 0) return 0;
  if (!sorted_) {
    std::sort(samples_.begin(), samples_.end());
    sorted_ = true;
  }
  // Rank of the p-quantile (1-based), at least 1.
  const double rank = std::max(1.0, p * static_cast<double>(count_));
  int64_t seen = 0;
  for (const auto& [value, weight] : samples_) {
    seen += weight;
    if (static_cast<double>(seen) >= rank - 1e-9) return value;
  }
  return samples_.back().first;
}

}  // namespace sluice::sim::llm
