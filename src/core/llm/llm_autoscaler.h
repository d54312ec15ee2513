// The LLM autoscaler BlitzScale runs (§5.3, following Llumnix and the Kubernetes HPA): prefill and
// decode pools scale independently on tokens/s and KV-cache usage against per-instance upper
// bounds profiled offline; scale-out as soon as the windowed load passes the upper bound, scale-in
// when it stays below the lower bound for the scale-down timeout (2 s by default). With P/D
// disaggregation and live scaling, a decode scale-out may instead mutate a prefill instance into a
// decode one (and scale prefill to compensate). Pure; time comes in as an argument.
// Thread-compatible (one autoscaler per LLM function, driven by one caller).
//
// CONTRACT (lead, issue 10): used by src/sim/llm (and the controller later). Extend, do not change.
#ifndef SLUICE_CORE_LLM_LLM_AUTOSCALER_H_
#define SLUICE_CORE_LLM_LLM_AUTOSCALER_H_

#include <deque>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/perf/llm_perf_model.h"

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

// The shape of a function's requests that the per-instance bounds are profiled at.
struct LlmBoundsShape {
  int prompt_tokens = 1024;     // a typical prompt
  int output_tokens = 64;       // a typical completion
  int max_batch_tokens = 4096;  // prefill chunk budget per iteration
  int max_decode_batch = 256;   // sequences per decode iteration
};
// Fills the per-instance upper bounds left at 0 with BlitzScale's "profiled offline" values from
// the perf model: 80 % of one instance's saturated prefill rate (full chunks of typical prompts)
// and of its decode rate at the batch its KV cache holds. Bounds already set are kept.
LlmScalerConfig FillProfiledBounds(LlmScalerConfig c, const LlmPerfModel& model,
                                   const LlmBoundsShape& shape);

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

// Decision rules (the reconstruction is argued in docs/blitzscale.md), per pool, on the mean of
// the samples observed in (now - window, now]:
//   scale-out  desired = ceil(mean tokens/s / upper bound) (decode also ceil(kv demand /
//              kv_usage_upper) when the KV usage passes kv_usage_upper; the demand is the mean
//              of kv_usage x decode_instances, in instances' worth), clamped to [min, max]; all the
//              missing instances are started at once (Llumnix / HPA style).
//   scale-in   one instance when the per-instance load stayed below lower_fraction x upper
//              (decode: and KV usage below lower_fraction x kv_usage_upper) for
//              scale_down_timeout, and n - 1 instances still meet the upper bounds; the timer
//              restarts after each step, so a pool shrinks by at most one per timeout.
//   mutation   (allow_mutation) a decode scale-out first takes prefill instances the prefill
//              pool can spare (its load below its lower bound; it keeps
//              max(min_prefill, ceil(load / upper)) instances); the rest starts fresh.
// Instance counts come from the latest Observe; Decide applies its own decision to them, so
// two Decide calls without an Observe in between do not count the same shortfall twice.
class LlmAutoscaler {
 public:
  // Precondition: ValidateScalerConfig(config).ok() (checked).
  explicit LlmAutoscaler(LlmScalerConfig config);
  // Samples must come in nondecreasing `now`; samples older than the window are dropped.
  void Observe(const LlmLoad& load);
  // No observation yet: no change.
  LlmScaleDecision Decide(absl::Time now);
  // When a pending scale-in timer expires (InfiniteFuture when none runs), so a simulator can
  // jump to it instead of ticking.
  absl::Time NextWakeup() const;
  const LlmScalerConfig& config() const { return config_; }

 private:
  struct Means {
    double prefill = 0, decode = 0;
    double kv_instances = 0;  // mean of kv_usage x decode_instances
  };
  Means WindowMeans() const;
  int DecidePrefill(const Means& m, int n, absl::Time now);
  int DecideDecode(const Means& m, int n, absl::Time now);
  int Mutations(const Means& m, int prefill_n, int decode_out) const;

  LlmScalerConfig config_;
  std::deque<LlmLoad> window_;
  absl::Time prefill_low_since_ = absl::InfiniteFuture();
  absl::Time decode_low_since_ = absl::InfiniteFuture();
  // Pool sizes: the latest Observe's, plus the decisions taken since.
  int prefill_n_ = 0;
  int decode_n_ = 0;
};

}  // namespace sluice::core::llm

#endif  // SLUICE_CORE_LLM_LLM_AUTOSCALER_H_
