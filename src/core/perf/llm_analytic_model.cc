// Closed-form LLM iteration time; the constants live in llm_builtin_models.cc.
#include "core/perf/llm_analytic_model.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {

double LlmLinearLayerSeconds(const LlmLinearParams& params, double tokens) {
  if (tokens <= 0)
    return 0;
  return std::pow(std::pow(params.t0_s, params.p) + std::pow(params.c_s * tokens, params.p),
                  1.0 / params.p);
}

AnalyticLlmModel::Breakdown AnalyticLlmModel::Terms(int64_t prefill_tokens, int prefill_seqs,
                                                    int decode_seqs,
                                                    int64_t decode_context_tokens) const {
  Breakdown b;
  const LlmModelSpec& s = params_.spec;
  const LlmGpuParams& g = params_.gpu;
  const double layers = s.num_layers, tp = s.tp, hidden = params_.arch.hidden;
  const double tokens = static_cast<double>(prefill_tokens) + decode_seqs;
  // A prefill with tokens but no sequence count is one sequence.
  const double pseqs = prefill_tokens > 0 ? std::max(prefill_seqs, 1) : prefill_seqs;
  const double rows = pseqs + decode_seqs;  // positions whose logits are computed
  if (tokens <= 0 && decode_context_tokens <= 0 && rows <= 0)
    return b;
  if (tokens > 0) {
    // Vidur's per-layer time already includes weight reads; the floor only guards derived
    // parameters (llama3-8b on h100) against a faster-than-HBM decode.
    double floor_s = static_cast<double>(s.param_bytes.count()) / tp / g.hbm_bytes_per_s;
    b.linear_s = std::max(layers * LlmLinearLayerSeconds(params_.linear, tokens), floor_s);
  }
  if (prefill_tokens > 0) {
    // Causal attention over equal-length prompts: QK^T and PV, 2 flops per MAC, half the square.
    double p = static_cast<double>(prefill_tokens);
    double flops = 4.0 * layers * hidden * (p * p / pseqs) / 2.0;
    b.prefill_attention_s = flops / tp / (g.peak_flops * g.prefill_attention_efficiency);
  }
  if (decode_context_tokens > 0) {
    double bytes = static_cast<double>(decode_context_tokens) * s.kv_bytes_per_token.count();
    b.decode_attention_s = bytes / tp / (g.hbm_bytes_per_s * g.decode_attention_efficiency);
  }
  if (rows > 0) {
    double weights = 2.0 * params_.arch.vocab * hidden;  // fp16 bytes of the LM head
    double read_s = weights / tp / g.hbm_bytes_per_s;
    double compute_s = rows * weights / tp / (g.peak_flops * g.lm_head_efficiency);
    b.lm_head_s = std::max(read_s, compute_s);
  }
  if (s.tp > 1 && tokens > 0) {
    // Megatron-style TP: one all-reduce after attention and one after the MLP, per layer.
    double bytes = tokens * hidden * 2.0;
    const AllReduceParams& ar = params_.all_reduce;
    b.all_reduce_s = 2.0 * layers * (ar.latency_s + bytes / ar.bytes_per_s);
  }
  b.overhead_s = params_.iteration_overhead_s;
  return b;
}

absl::Duration AnalyticLlmModel::IterationTime(int64_t prefill_tokens, int prefill_seqs,
                                               int decode_seqs,
                                               int64_t decode_context_tokens) const {
  return absl::Seconds(
      Terms(prefill_tokens, prefill_seqs, decode_seqs, decode_context_tokens).total_s());
}

}  // namespace sluice::core
