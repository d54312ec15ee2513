// LlmEngine: the emulated continuous-batching engine of sluice-example-llm. Each iteration
// prefills the newly admitted prompts and decodes one token for every running sequence, and
// lasts core::LlmPerfModel::IterationTime (times a scale) on the Env's clock; text comes from a
// deterministic word generator seeded by the prompt (NOT a language model). KV is reserved at
// admission (prompt + max_tokens), so the cache never overflows and nothing is preempted.
// Thread-compatible: every call, and every callback, runs on the Env's loop thread.
#ifndef SLUICE_EXAMPLES_LLM_LLM_ENGINE_H_
#define SLUICE_EXAMPLES_LLM_LLM_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/env.h"
#include "core/perf/llm_perf_model.h"

namespace sluice::examples {

// Whitespace-separated words: the emulated tokenizer (one token per word, at least 1).
int CountPromptTokens(const std::string& prompt);
// Seed of the generator for a prompt (FNV-1a of its bytes).
uint64_t PromptSeed(const std::string& prompt);
// Token `index` (0-based) of the deterministic text for `seed`: a word and a trailing space.
std::string GeneratedToken(uint64_t seed, int index);

struct GenJob {
  std::string request_id;
  int prompt_tokens = 1;
  int max_tokens = 16;  // completion tokens, including the first (prefill) token
  std::vector<std::string> stop;
  uint64_t seed = 0;
  // Prefill only: the job ends after the first token (finish_reason "prefill").
  bool prefill_only = false;
  // Decode from a transferred KV: the prompt is already prefilled and token 0 was produced by
  // the prefill instance; generation starts at token 1 with no prefill cost.
  bool from_kv = false;
  // from_kv only: whether on_done's completion count includes the prefill's first token.
  bool count_first = true;
  std::function<void(int index, const std::string& text)> on_token;
  std::function<void(const std::string& finish_reason, int prompt_tokens,
                     int completion_tokens)> on_done;
};

struct EngineOptions {
  double time_scale = 1.0;  // emulated iteration = IterationTime x time_scale
  int max_batch_seqs = 256;
};

// Sequence states: kWaiting (queued, no KV) -> kPrefilling (in the current iteration, KV
// reserved) -> kDecoding (one token per iteration) -> done (KV released, job dropped).
// A from_kv job goes kWaiting -> kDecoding; a prefill_only job ends after kPrefilling.
class LlmEngine {
 public:
  LlmEngine(common::Env& env, std::unique_ptr<core::LlmPerfModel> model, EngineOptions options);
  ~LlmEngine();

  // Cancels the running iteration and drops every job without calling its callbacks (their
  // captures are destroyed). Call on the loop thread before destroying an engine whose loop is
  // still running; Submit works again afterwards.
  void Abort();

  // Drops the job with `request_id` (queued or running; its KV released) without calling its
  // callbacks, so an answer it was streaming is aborted. False when no such job is here.
  bool Cancel(const std::string& request_id);

  // Queues the job. InvalidArgument naming the field when prompt_tokens + max_tokens exceeds the
  // model's max context or the whole KV cache (it could never run), or max_tokens < 1.
  absl::Status Submit(GenJob job);

  const core::LlmPerfModel& model() const { return *model_; }
  int64_t kv_capacity_tokens() const { return capacity_; }
  int64_t kv_used_tokens() const { return kv_used_; }
  int running() const { return static_cast<int>(running_.size()); }
  int waiting() const { return static_cast<int>(waiting_.size()); }
  int64_t iterations() const { return iterations_; }
  // Prompt tokens prefilled and tokens generated since construction (the controller's P/D
  // autoscaler turns their deltas into tokens/s), and prompt tokens of the queued prefills.
  int64_t prompt_tokens_total() const { return prompt_tokens_total_; }
  int64_t generated_tokens_total() const { return generated_tokens_total_; }
  int64_t waiting_prompt_tokens() const;

 private:
  struct Seq {
    GenJob job;
    int next_index = 0;  // next token to produce
    bool prefilling = false;
    std::string text;    // generated so far (for stop matching)
  };
  void Admit();
  void StartIteration();
  void FinishIteration();
  // Emits the next token of `s`; true when `s` is finished (and reported).
  bool Step(Seq& s);

  common::Env& env_;
  std::unique_ptr<core::LlmPerfModel> model_;
  EngineOptions options_;
  int64_t capacity_ = 0;
  int64_t kv_used_ = 0;
  std::deque<Seq> waiting_;
  std::vector<Seq> running_;
  bool busy_ = false;
  int64_t iterations_ = 0;
  int64_t prompt_tokens_total_ = 0;
  int64_t generated_tokens_total_ = 0;
  common::Env::TimerId timer_ = 0;
};

}  // namespace sluice::examples

#endif  // SLUICE_EXAMPLES_LLM_LLM_ENGINE_H_
