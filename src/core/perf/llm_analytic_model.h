// The analytic token-level LLM model behind BuiltinLlmModel (llm_perf_model.h): its parameters
// (fitted token-linear and all-reduce constants, GPU peaks, estimated attention efficiencies) and
// the closed-form iteration time. Used by llm_perf_model.cc, the refit tool (src/sim/perf_fit),
// `sluice sim llm-profile` and tests. Equations: docs/perf-model.md, "LLM serving model".
// Thread-compatible: immutable after construction.
#ifndef SLUICE_CORE_PERF_LLM_ANALYTIC_MODEL_H_
#define SLUICE_CORE_PERF_LLM_ANALYTIC_MODEL_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/perf/llm_perf_model.h"

namespace sluice::core {

// Token-linear operators (QKV/output projections, MLP, norms, rope, residual adds) of ONE layer on
// one GPU of a tp-way instance, for n tokens in the iteration:
//   t(n) = (t0^p + (c n)^p)^(1/p)   seconds
// a smooth maximum of the weight-read floor t0 (memory bound, small n) and the compute slope c
// (large n). Fitted to Vidur's mlp.csv (sum of op medians, emb excluded).
struct LlmLinearParams {
  double t0_s = 0;
  double c_s = 0;  // seconds per token
  double p = 1;
};
double LlmLinearLayerSeconds(const LlmLinearParams& params, double tokens);

// One intra-node all-reduce of `bytes` among tp GPUs: latency_s + bytes / bytes_per_s. Fitted to
// Vidur's network/<sku>_dgx/all_reduce.csv (num_workers = devices_per_node = tp).
struct AllReduceParams {
  double latency_s = 0;
  double bytes_per_s = 1;
};

// Architecture figures from the public model cards.
struct LlmArchitecture {
  int hidden = 4096;
  int kv_heads = 32;
  int head_dim = 128;
  int vocab = 32000;
};

// Peaks from the vendor data sheets, and efficiencies the Vidur subset cannot calibrate (it lacks
// attention.csv): chosen, documented in docs/perf-model.md.
struct LlmGpuParams {
  std::string name;                 // "a100", "h100"
  double hbm_bytes_per_s = 2.039e12;
  double peak_flops = 312e12;       // dense fp16/bf16 tensor-core
  double prefill_attention_efficiency = 0.5;  // of peak_flops
  double decode_attention_efficiency = 0.6;   // of hbm_bytes_per_s
  double lm_head_efficiency = 0.6;            // of peak_flops
};

struct LlmAnalyticParams {
  LlmModelSpec spec;
  LlmArchitecture arch;
  LlmGpuParams gpu;
  LlmLinearParams linear;
  AllReduceParams all_reduce;     // unused when spec.tp == 1
  double iteration_overhead_s = 0;  // scheduler, sampling, launch: once per non-empty iteration
};

// IterationTime = max(L t(n), weight floor) + prefill attention + decode attention + LM head
//                 + 2 L all-reduces (tp > 1) + overhead, n = prefill_tokens + decode_seqs.
// See llm_perf_model.h for the argument contract.
class AnalyticLlmModel : public LlmPerfModel {
 public:
  explicit AnalyticLlmModel(LlmAnalyticParams params) : params_(std::move(params)) {}
  const LlmModelSpec& spec() const override { return params_.spec; }
  const LlmAnalyticParams& params() const { return params_; }
  absl::Duration IterationTime(int64_t prefill_tokens, int prefill_seqs, int decode_seqs,
                               int64_t decode_context_tokens) const override;

  // The terms of IterationTime, in seconds, for reports (sluice sim llm-profile) and tests.
  struct Breakdown {
    double linear_s = 0, prefill_attention_s = 0, decode_attention_s = 0, lm_head_s = 0,
           all_reduce_s = 0, overhead_s = 0;
    double total_s() const {
      return linear_s + prefill_attention_s + decode_attention_s + lm_head_s + all_reduce_s +
             overhead_s;
    }
  };
  Breakdown Terms(int64_t prefill_tokens, int prefill_seqs, int decode_seqs,
                  int64_t decode_context_tokens) const;

 private:
  LlmAnalyticParams params_;
};

// The shipped parameters of a built-in model (llm_builtin_models.cc). Same naming and errors as
// BuiltinLlmModel: NotFound naming the known models or GPUs; InvalidArgument for a tp Vidur did
// not profile (1, 2, 4, 8) or one whose KV cache cannot hold one max-length context.
absl::StatusOr<LlmAnalyticParams> BuiltinLlmParams(absl::string_view name,
                                                   absl::string_view gpu = "a100", int tp = 0);

// The fitted token-linear / all-reduce constants as shipped, by Vidur's names: `vidur_model` is
// "Llama-2-7b-hf", "Llama-2-70b-hf" or "Meta-Llama-3-8B"; `sku` "a100" or "h100". NotFound when
// the pair was not profiled (llama3-8b on h100 is derived, see llm_builtin_models.cc).
absl::StatusOr<LlmLinearParams> ShippedLinearParams(absl::string_view vidur_model,
                                                    absl::string_view sku, int tp);
absl::StatusOr<AllReduceParams> ShippedAllReduceParams(absl::string_view sku, int tp);

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_LLM_ANALYTIC_MODEL_H_
