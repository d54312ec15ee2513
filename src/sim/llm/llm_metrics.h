// Per-function counters and latency samples of one LLM simulation run (src/sim/llm): TTFT per
// request, every time-between-tokens gap (weighted, so one decode iteration of n sequences is one
// sample of weight n), SLO attainment and per-interval token counts for the timeline. Used by the
// batcher and the engine. Not thread-safe.
#ifndef SLUICE_SIM_LLM_LLM_METRICS_H_
#define SLUICE_SIM_LLM_LLM_METRICS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace sluice::sim::llm {

// Values (milliseconds) with integer weights; percentiles over the weighted multiset.
class WeightedSamples {
 public:
  void Add(double value_ms, int64_t weight = 1);
  int64_t count() const { return count_; }
  double Mean() const;
  // p in [0, 1]: the smallest value v such that at least p of the weight is <= v (0 when empty).
  // Sorts in place; adding after a call is allowed.
  double Percentile(double p);

 private:
  std::vector<std::pair<float, int64_t>> samples_;
  int64_t count_ = 0;
  double sum_ = 0;
  bool sorted_ = true;
};

struct FunctionStats {
  int64_t requests = 0, completed = 0, rejected = 0, slo_met = 0;
  int64_t scale_outs = 0, scale_ins = 0, mutations = 0, live_scales = 0, preemptions = 0;
  int64_t loads = 0, instance_failures = 0, requeued = 0;
  double load_s_sum = 0;
  WeightedSamples ttft, tbt;
  // Since the last timeline sample.
  int64_t interval_prefill_tokens = 0, interval_decode_tokens = 0, interval_prompt_arrivals = 0;
  // Gaps between consecutive tokens of one request.
  void AddGap(absl::Duration gap, int64_t weight = 1) {
    tbt.Add(absl::ToDoubleMilliseconds(gap), weight);
  }
};

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_LLM_METRICS_H_
