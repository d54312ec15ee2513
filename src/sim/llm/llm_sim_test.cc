// RunLlmSimulation with the built-in perf models and the named policy sets: a 5x burst on
// llama2-7b over cluster A, every policy runs, requests are accounted for, bad input is named.
#include "sim/llm/llm_sim.h"

#include "gtest/gtest.h"

namespace sluice::sim::llm {
namespace {

LlmSimConfig BurstConfigFor(const std::vector<std::string>& policies) {
  LlmSimConfig c;
  c.name = "burst";
  c.source_file = "burst.yaml";
  c.cluster = *core::net::NetPreset("blitzscale-a", 2);
  c.duration = absl::Seconds(30);
  c.drain_timeout = absl::Seconds(60);
  LlmFunctionConfig f;
  f.name = "chat";
  f.model = "llama2-7b";
  f.workload.kind = WorkloadKind::kPoisson;
  f.workload.rate_rps = 4;
  f.default_prompt_tokens = 1024;
  f.default_output_tokens = 32;
  c.functions.push_back(f);
  BurstConfig b;
  b.function = "chat";
  b.at = absl::Seconds(10);
  b.factor = 5;
  b.hold = absl::Seconds(10);
  c.bursts.push_back(b);
  for (const std::string& p : policies) {
    LlmPolicyConfig pc;
    pc.set = *core::llm::MakeLlmPolicySet(p, {});
    c.policies.push_back(pc);
  }
  return c;
}

TEST(LlmSimTest, EveryPolicySetRunsAndAccountsForEveryRequest) {
  const LlmSimConfig c = BurstConfigFor(core::llm::LlmPolicySetNames());
  absl::StatusOr<std::vector<LlmRunResult>> runs = RunLlmExperiment(c);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), c.policies.size());
  for (const LlmRunResult& r : *runs) {
    const LlmFunctionResult& f = r.functions[0];
    SCOPED_TRACE(r.policy);
    EXPECT_GT(f.requests, 100);
    EXPECT_EQ(f.completed + f.rejected, f.requests);
    EXPECT_GT(f.ttft_p50_ms, 0);
    EXPECT_GT(r.gpu_seconds, 0);
    EXPECT_FALSE(r.timeline.empty());
  }
}

TEST(LlmSimTest, UnknownModelIsNamed) {
  LlmSimConfig c = BurstConfigFor({"blitzscale"});
  c.functions[0].model = "gpt-17";
  absl::StatusOr<std::vector<LlmRunResult>> runs = RunLlmExperiment(c);
  ASSERT_FALSE(runs.ok());
  EXPECT_NE(runs.status().message().find("burst.yaml: function chat: model"), std::string::npos)
      << runs.status();
}

TEST(LlmSimTest, UnknownBurstFunctionIsNamed) {
  LlmSimConfig c = BurstConfigFor({"blitzscale"});
  c.bursts[0].function = "nope";
  absl::StatusOr<std::vector<LlmRunResult>> runs = RunLlmExperiment(c);
  ASSERT_FALSE(runs.ok());
  EXPECT_NE(runs.status().message().find("bursts: unknown function nope"), std::string::npos)
      << runs.status();
}

}  // namespace
}  // namespace sluice::sim::llm
