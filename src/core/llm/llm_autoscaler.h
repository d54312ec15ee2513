// The LLM autoscaler BlitzScale runs (§5.3, following Llumnix and the Kubernetes HPA): prefill and
// decode pools scale independently on tokens/s and KV-cache usage against per-instance upper
// bounds profiled offline; scale-out as soon as the windowed load passes the upper bound, scale-in
// when it stays below the lower bound for the scale-down timeout (2 s by default). With P/D
// disaggregation and live scaling, a decode scale-out may instead mutate a prefill instance into a
// decode one (and scale prefill to compensate). Pure; time comes in as an argument.
//
// CONTRACT (lead, issue 10): used by src/sim/llm (and the controller later). Extend, do not change.
#ifndef SLUICE_CORE_LLM_LLM_AUTOSCALER_H_
#define SLUICE_CORE_LLM_LLM_AUTOSCALER_H_

#include <deque>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace sluice::core::llm {

enum class Role { kColocated, kPrefill, kDecode };

struct LlmScalerConfig {
  absl::Duration window = absl::Seconds(1);            // load averaging window
  absl::Duration scale_down_timeout = absl::Seconds(2);
  double prefill_tokens_per_s_per_instance = 0;  // upper bound per prefill instance (> 0)
  double decode_tokens_per_s_per_instance = 0;   // upper bound per decode instance (> 0)
  double kv_usage_upper = 0.85;                  // decode KV fraction that triggers scale-out
  double lower_fraction = 0.5;                   // lower bound = lower_fraction x upper bound
  int min_prefill = 1, max_prefill = 1 << 20;
  int min_decode = 1, max_decode = 1 << 20;
  bool allow_mutation = false;                   // BlitzScale's prefill -> decode mutation
};
[[nodiscard]] absl::Status ValidateScalerConfig(const LlmScalerConfig& c);  // names the field

struct LlmLoad {
  absl::Time now;
  double prefill_tokens_per_s = 0;  // prompt tokens arriving per second (incl. queued demand)
  double decode_tokens_per_s = 0;   // output tokens generated per second
  double kv_usage = 0;              // mean KV fraction used over decode (or colocated) instances
  int prefill_instances = 0;        // serving + loading
  int decode_instances = 0;
};

struct LlmScaleDecision {
  int prefill_delta = 0;   // > 0 start, < 0 drain
  int decode_delta = 0;
  int mutate_prefill_to_decode = 0;  // prefill instances to switch role (counted in neither delta)
};

class LlmAutoscaler {
 public:
  explicit LlmAutoscaler(LlmScalerConfig config);
  void Observe(const LlmLoad& load);
  LlmScaleDecision Decide(absl::Time now);

 private:
  LlmScalerConfig config_;
  std::deque<LlmLoad> window_;
  absl::Time prefill_low_since_ = absl::InfiniteFuture();
  absl::Time decode_low_since_ = absl::InfiniteFuture();
};

}  // namespace sluice::core::llm

#endif  // SLUICE_CORE_LLM_LLM_AUTOSCALER_H_
