// Continuous batching over the Env's timers; see llm_engine.h.
#include "llm_engine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sluice::examples {
namespace {

constexpr const char* kWords[] = {
    "the",   "river", "carries", "light",  "over",  "stone", "and",    "a",     "quiet",
    "sluice", "opens", "to",     "let",    "water", "find",  "its",    "level", "while",
    "gates", "hold",  "steady",  "under",  "slow",  "sky",   "each",   "token", "flows",
    "on",    "time",  "through", "narrow", "channels"};
constexpr int kNumWords = sizeof(kWords) / sizeof(kWords[0]);

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int64_t Reserve(const GenJob& j) {
  return int64_t{j.prompt_tokens} + j.max_tokens;
}

}  // namespace

int CountPromptTokens(const std::string& prompt) {
  std::vector<absl::string_view> words =
      absl::StrSplit(prompt, absl::ByAnyChar(" \t\n\r"), absl::SkipEmpty());
  return std::max<int>(1, static_cast<int>(words.size()));
}

uint64_t PromptSeed(const std::string& prompt) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : prompt)
    h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string GeneratedToken(uint64_t seed, int index) {
  return absl::StrCat(kWords[Mix(seed + static_cast<uint64_t>(index)) % kNumWords], " ");
}

LlmEngine::LlmEngine(common::Env& env, std::unique_ptr<core::LlmPerfModel> model,
                     EngineOptions options)
    : env_(env), model_(std::move(model)), options_(options),
      capacity_(model_->spec().KvCapacityTokens()) {}

LlmEngine::~LlmEngine() {
  Abort();
}

void LlmEngine::Abort() {
  if (busy_)
    env_.Cancel(timer_);
  busy_ = false;
  waiting_.clear();
  running_.clear();
  kv_used_ = 0;
}

absl::Status LlmEngine::Submit(GenJob job) {
  if (job.max_tokens < 1)
    return absl::InvalidArgumentError("max_tokens: must be >= 1");
  const int64_t need = Reserve(job);
  const int max_ctx = model_->spec().max_context_tokens;
  if (need > max_ctx || need > capacity_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prompt: ", job.prompt_tokens, " prompt tokens + max_tokens ", job.max_tokens, " = ",
        need, " exceed ", need > max_ctx ? "the model's context of " : "the KV cache of ",
        need > max_ctx ? max_ctx : capacity_, " tokens (", model_->spec().name, ")"));
  }
  waiting_.push_back(Seq{std::move(job), 0, false, {}});
  if (!busy_)
    StartIteration();
  return absl::OkStatus();
}

bool LlmEngine::Cancel(const std::string& request_id) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->job.request_id == request_id) {
      waiting_.erase(it);
      return true;
    }
  }
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if (it->job.request_id == request_id) {
      kv_used_ -= Reserve(it->job);
      running_.erase(it);  // the iteration under way keeps its length; the job is just gone
      return true;
    }
  }
  return false;
}

int64_t LlmEngine::waiting_prompt_tokens() const {
  int64_t n = 0;
  for (const Seq& s : waiting_)
    n += s.job.from_kv ? 0 : s.job.prompt_tokens;
  return n;
}

void LlmEngine::Admit() {
  while (!waiting_.empty() && static_cast<int>(running_.size()) < options_.max_batch_seqs &&
         kv_used_ + Reserve(waiting_.front().job) <= capacity_) {
    Seq s = std::move(waiting_.front());
    waiting_.pop_front();
    kv_used_ += Reserve(s.job);
    s.prefilling = !s.job.from_kv;
    s.next_index = s.job.from_kv ? 1 : 0;
    running_.push_back(std::move(s));
  }
}

void LlmEngine::StartIteration() {
  Admit();
  if (running_.empty()) {
    busy_ = false;
    return;
  }
  int64_t prefill_tokens = 0, context = 0;
  int prefill_seqs = 0, decode_seqs = 0;
  for (const Seq& s : running_) {
    if (s.prefilling) {
      prefill_tokens += s.job.prompt_tokens;
      ++prefill_seqs;
    } else {
      ++decode_seqs;
      context += s.job.prompt_tokens + s.next_index;
    }
  }
  absl::Duration d =
      model_->IterationTime(prefill_tokens, prefill_seqs, decode_seqs, context) *
      options_.time_scale;
  busy_ = true;
  timer_ = env_.RunAt(env_.Now() + d, [this] { FinishIteration(); });
}

bool LlmEngine::Step(Seq& s) {
  const int index = s.next_index++;
  std::string token = GeneratedToken(s.job.seed, index);
  std::string candidate = s.text + token;
  for (const std::string& stop : s.job.stop) {
    if (!stop.empty() && candidate.find(stop) != std::string::npos) {
      s.job.on_done("stop", s.job.prompt_tokens, index);
      return true;
    }
  }
  s.text = std::move(candidate);
  ++generated_tokens_total_;
  s.job.on_token(index, token);
  if (s.job.prefill_only && index == 0) {
    s.job.on_done("prefill", s.job.prompt_tokens, 1);
    return true;
  }
  if (s.next_index >= s.job.max_tokens) {
    s.job.on_done("length", s.job.prompt_tokens, s.next_index);
    return true;
  }
  return false;
}

void LlmEngine::FinishIteration() {
  ++iterations_;
  std::vector<Seq> still;
  still.reserve(running_.size());
  for (Seq& s : running_) {
    if (s.prefilling)
      prompt_tokens_total_ += s.job.prompt_tokens;
    s.prefilling = false;
    if (Step(s))
      kv_used_ -= Reserve(s.job);
    else
      still.push_back(std::move(s));
  }
  running_ = std::move(still);
  StartIteration();
}

}  // namespace sluice::examples
