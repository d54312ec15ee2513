// Speed of the LLM engine: a 1,000-GPU run (cluster A's nodes x 125, eight llama2-7b functions,
// each with a 5x burst) under blitzscale and serverless-llm; events/s is the reported rate.
#include "benchmark/benchmark.h"
#include "core/llm/llm_policies.h"
#include "sim/llm/llm_sim.h"

namespace sluice::sim::llm {
namespace {

LlmSimConfig ThousandGpus(const std::string& policy, double rps, absl::Duration duration) {
  LlmSimConfig c;
  c.name = "bench-1000";
  c.cluster = *core::net::NetPreset("blitzscale-a", 125);
  c.duration = duration;
  c.drain_timeout = absl::Seconds(30);
  for (int i = 0; i < 8; ++i) {
    LlmFunctionConfig f;
    f.name = "f" + std::to_string(i);
    f.model = "llama2-7b";
    f.initial_prefill = 4;
    f.initial_decode = 4;
    f.workload.kind = WorkloadKind::kPoisson;
    f.workload.rate_rps = rps;
    f.default_prompt_tokens = 1024;
    f.default_output_tokens = 32;
    c.functions.push_back(f);
    BurstConfig b;
    b.function = f.name;
    b.at = duration / 4;
    b.factor = 5;
    b.hold = duration / 4;
    c.bursts.push_back(b);
  }
  LlmPolicyConfig p;
  p.set = *core::llm::MakeLlmPolicySet(policy, {});
  c.policies.push_back(p);
  return c;
}

void BM_Llm1000Gpus(benchmark::State& state, const std::string& policy) {
  const LlmSimConfig c = ThousandGpus(policy, static_cast<double>(state.range(0)),
                                      absl::Seconds(state.range(1)));
  int64_t events = 0;
  double peak = 0;
  for (auto _ : state) {
    absl::StatusOr<LlmRunResult> r = RunLlmSimulation(c, c.policies[0]);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    events += r->events;
    peak = r->peak_gpus;
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events),
                                                      benchmark::Counter::kIsRate);
  state.counters["peak_gpus"] = peak;
}
BENCHMARK_CAPTURE(BM_Llm1000Gpus, blitzscale, std::string("blitzscale"))
    ->Args({200, 60})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Llm1000Gpus, serverless_llm, std::string("serverless-llm"))
    ->Args({200, 60})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
}  // namespace sluice::sim::llm
