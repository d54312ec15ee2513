// Token-level LLM performance model: the time of one prefill, decode or mixed iteration of a
// continuous-batching engine at tensor-parallel degree tp, KV-cache bytes per token, and the
// layer structure live scaling splits. Used by the LLM simulator (src/sim/llm), BlitzScale's
// zigzag planner inputs, the autoscaler's per-instance capacity and the emulated LLM example
// function on the platform. Thread-compatible: immutable after construction.
//
// CONTRACT (lead, issue 10): shared by src/sim/llm, src/core/llm and examples/. Extend, do not
// change the signatures.
#ifndef SLUICE_CORE_PERF_LLM_PERF_MODEL_H_
#define SLUICE_CORE_PERF_LLM_PERF_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/units.h"

namespace sluice::core {

struct LlmModelSpec {
  std::string name;       // "llama2-7b", "llama2-70b", "llama3-8b"
  std::string gpu;        // the GPU the timings are for: "a100" (A800 is timed as A100), "h100"
  int num_layers = 32;
  int tp = 1;             // tensor-parallel degree: GPUs per instance
  common::Bytes param_bytes;         // whole model (all TP shards), fp16
  common::Bytes kv_bytes_per_token;  // whole model (all layers, all TP shards), fp16 K and V
  common::Bytes gpu_memory;          // usable memory per GPU (KV capacity = tp x gpu_memory -
                                     // param_bytes - activation reserve)
  common::Bytes activation_reserve;  // per instance, kept free of KV
  int max_context_tokens = 4096;
  // KV-cache capacity of one instance in tokens (>= 0).
  int64_t KvCapacityTokens() const;
  common::Bytes LayerBytes() const { return common::Bytes(param_bytes.count() / num_layers); }
};

class LlmPerfModel {
 public:
  virtual ~LlmPerfModel() = default;
  virtual const LlmModelSpec& spec() const = 0;

  // One iteration of the whole model (all layers, TP included) that prefills `prefill_tokens`
  // prompt tokens of `prefill_seqs` sequences and decodes one token for each of `decode_seqs`
  // sequences whose contexts hold `decode_context_tokens` tokens in total. Every argument >= 0;
  // all zero gives zero. Monotone non-decreasing in prefill_tokens, decode_seqs and
  // decode_context_tokens. Not in prefill_seqs: the same prefill tokens split over more
  // sequences are shorter prompts with less (quadratic) attention, so the time may fall; adding a
  // sequence together with its tokens never lowers it. (llmperf: the contract said "each
  // argument", which no attention model with these arguments can satisfy.)
  virtual absl::Duration IterationTime(int64_t prefill_tokens, int prefill_seqs, int decode_seqs,
                                       int64_t decode_context_tokens) const = 0;

  absl::Duration PrefillTime(int64_t tokens, int seqs) const {
    return IterationTime(tokens, seqs, 0, 0);
  }
  absl::Duration DecodeTime(int seqs, int64_t context_tokens) const {
    return IterationTime(0, 0, seqs, context_tokens);
  }
  // Layers are uniform: one layer of an iteration takes IterationTime / num_layers.
  absl::Duration LayerTime(int64_t prefill_tokens, int prefill_seqs, int decode_seqs,
                           int64_t decode_context_tokens) const {
    return IterationTime(prefill_tokens, prefill_seqs, decode_seqs, decode_context_tokens) /
           spec().num_layers;
  }
};

// The built-in LLM models fitted from ../shared/data/vidur-profiling-subset (token-linear ops,
// all-reduce for tp > 1) with attention estimated (docs/perf-model.md, "LLM serving model").
// `name`: "llama2-7b", "llama2-70b", "llama3-8b"; `gpu`: "a100", "a800" (= a100), "h100";
// `tp` >= 1 (0 = the model's default: 4 for llama2-70b, else 1). NotFound naming the known
// models, InvalidArgument when the model does not fit tp GPUs.
absl::StatusOr<std::unique_ptr<LlmPerfModel>> BuiltinLlmModel(absl::string_view name,
                                                              absl::string_view gpu = "a100",
                                                              int tp = 0);
std::vector<std::string> BuiltinLlmModelNames();

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_LLM_PERF_MODEL_H_
