// Test fakes for the LLM simulator (src/sim/llm tests and benchmarks): a perf model with round
// numbers (prefill a + b x tokens, decode c + d x sequences, mixed = sum), a scripted arrival
// source and a scripted autoscaler. Not thread-safe.
#ifndef SLUICE_SIM_LLM_TESTING_FAKE_LLM_H_
#define SLUICE_SIM_LLM_TESTING_FAKE_LLM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/perf/llm_perf_model.h"
#include "sim/llm/engine.h"
#include "sim/workload/arrivals.h"

namespace sluice::sim::llm::testing {

struct FakeTimes {
  absl::Duration prefill_base = absl::Milliseconds(10);
  absl::Duration prefill_per_token = absl::Microseconds(10);  // 100 tokens = 1 ms
  absl::Duration decode_base = absl::Milliseconds(5);
  absl::Duration decode_per_seq = absl::Microseconds(100);
};

class FakeLlmPerfModel : public core::LlmPerfModel {
 public:
  // kv_tokens: KV capacity of one instance; layer_bytes: parameters per layer (whole model).
  FakeLlmPerfModel(int64_t kv_tokens, int num_layers = 4, int tp = 1,
                   int64_t layer_bytes = 1'000'000'000, FakeTimes times = {})
      : times_(times) {
    spec_.name = "fake-llm";
    spec_.gpu = "a100";
    spec_.num_layers = num_layers;
    spec_.tp = tp;
    spec_.param_bytes = common::Bytes(layer_bytes * num_layers);
    spec_.kv_bytes_per_token = common::Bytes(1'000'000);
    spec_.activation_reserve = common::Bytes(0);
    spec_.gpu_memory =
        common::Bytes((spec_.param_bytes.count() + kv_tokens * 1'000'000 + tp - 1) / tp);
  }
  const core::LlmModelSpec& spec() const override { return spec_; }
  absl::Duration IterationTime(int64_t prefill_tokens, int prefill_seqs, int decode_seqs,
                               int64_t decode_context_tokens) const override {
    (void)prefill_seqs;
    (void)decode_context_tokens;
    absl::Duration d;
    if (prefill_tokens > 0) d += times_.prefill_base + prefill_tokens * times_.prefill_per_token;
    if (decode_seqs > 0) d += times_.decode_base + decode_seqs * times_.decode_per_seq;
    return d;
  }

 private:
  core::LlmModelSpec spec_;
  FakeTimes times_;
};

class ScriptedSource : public ArrivalSource {
 public:
  explicit ScriptedSource(std::vector<Arrival> arrivals) : arrivals_(std::move(arrivals)) {}
  std::optional<Arrival> Next() override {
    if (next_ >= arrivals_.size()) return std::nullopt;
    return arrivals_[next_++];
  }
  double MeanRate() const override { return 0; }

 private:
  std::vector<Arrival> arrivals_;
  size_t next_ = 0;
};

// Returns the scripted decision at the first Decide at or after each time; zero otherwise.
class ScriptedScaler : public ScaleDecider {
 public:
  explicit ScriptedScaler(std::vector<std::pair<absl::Time, core::llm::LlmScaleDecision>> script)
      : script_(std::move(script)) {}
  void Observe(const core::llm::LlmLoad& load) override { loads.push_back(load); }
  core::llm::LlmScaleDecision Decide(absl::Time now) override {
    if (next_ < script_.size() && now >= script_[next_].first) return script_[next_++].second;
    return {};
  }
  std::vector<core::llm::LlmLoad> loads;

 private:
  std::vector<std::pair<absl::Time, core::llm::LlmScaleDecision>> script_;
  size_t next_ = 0;
};

}  // namespace sluice::sim::llm::testing

#endif  // SLUICE_SIM_LLM_TESTING_FAKE_LLM_H_
