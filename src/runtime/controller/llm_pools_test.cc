// Tests of the controller's pure P/D pieces (llm_pools.h): stats parsing, rates, per-pool load,
// mutation victims, the scaler config and the role's instance spec.
#include "runtime/controller/llm_pools.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LlmPoolsTest, ParsesStatsAndNamesTheBadField) {
  auto s = ParseLlmStats(R"({"role": "decode", "kv_capacity_tokens": 100, "kv_used_tokens": 40,
      "running": 2, "waiting": 1, "waiting_prompt_tokens": 30, "prompt_tokens_total": 7,
      "generated_tokens_total": 9, "model": "llama2-7b"})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->role, "decode");
  EXPECT_EQ(s->kv_used_tokens, 40);
  EXPECT_EQ(s->waiting_prompt_tokens, 30);
  EXPECT_EQ(s->generated_tokens_total, 9);
  // Counters an older instance does not report read 0.
  auto old = ParseLlmStats(R"({"role": "prefill"})");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->prompt_tokens_total, 0);
  EXPECT_THAT(ParseLlmStats("[1]").status().message(), HasSubstr("stats"));
  EXPECT_THAT(ParseLlmStats(R"({"kv_used_tokens": 1})").status().message(),
              HasSubstr("stats.role"));
  EXPECT_THAT(ParseLlmStats(R"({"role": "decode", "kv_used_tokens": -1})").status().message(),
              HasSubstr("stats.kv_used_tokens"));
  EXPECT_THAT(ParseLlmStats(R"({"role": "decode", "running": "2"})").status().message(),
              HasSubstr("stats.running"));
}

TEST(LlmPoolsTest, RatesAreCounterDeltasOverTime) {
  LlmPools::Polled p;
  LlmInstanceStats s;
  const absl::Time t0 = absl::FromUnixSeconds(100);
  s.generated_tokens_total = 1000;
  AddStats(p, s, t0);
  EXPECT_EQ(p.generated_tokens_per_s, 0);  // first answer: no rate yet
  s.generated_tokens_total = 1500;
  s.prompt_tokens_total = 200;
  AddStats(p, s, t0 + absl::Milliseconds(500));
  EXPECT_DOUBLE_EQ(p.generated_tokens_per_s, 1000);
  EXPECT_DOUBLE_EQ(p.prompt_tokens_per_s, 400);
  s.generated_tokens_total = 10;  // restarted instance: no negative rate
  AddStats(p, s, t0 + absl::Seconds(1));
  EXPECT_EQ(p.generated_tokens_per_s, 0);
}

LlmInstanceView View(int64_t id, const std::string& role, double prompt_rate, double gen_rate,
                     int64_t kv_used = 0, int busy = 0) {
  LlmInstanceView v;
  v.id = id;
  v.role = role;
  v.ready = true;
  v.has_stats = true;
  v.prompt_tokens_per_s = prompt_rate;
  v.generated_tokens_per_s = gen_rate;
  v.stats.role = role;
  v.stats.kv_capacity_tokens = 100;
  v.stats.kv_used_tokens = kv_used;
  v.stats.running = busy;
  return v;
}

TEST(LlmPoolsTest, PoolLoadSumsEachPoolAndAveragesDecodeKv) {
  std::vector<LlmInstanceView> v = {View(1, "prefill", 300, 5), View(2, "prefill", 100, 5),
                                    View(3, "decode", 0, 50, 20), View(4, "decode", 0, 70, 60)};
  v[1].stats.waiting_prompt_tokens = 200;  // queued demand over a 2 s window: +100 tokens/s
  LlmInstanceView starting;
  starting.id = 5;
  starting.role = "decode";  // starting, no stats yet: counted, adds no load
  v.push_back(starting);
  const core::llm::LlmLoad load = PoolLoad(v, absl::UnixEpoch(), absl::Seconds(2));
  EXPECT_DOUBLE_EQ(load.prefill_tokens_per_s, 500);
  EXPECT_DOUBLE_EQ(load.decode_tokens_per_s, 120);
  EXPECT_DOUBLE_EQ(load.kv_usage, 0.4);
  EXPECT_EQ(load.prefill_instances, 2);
  EXPECT_EQ(load.decode_instances, 3);
}

TEST(LlmPoolsTest, MutationsTakeTheLeastBusyReadyPrefillAndNeverTheLast) {
  std::vector<LlmInstanceView> v = {View(1, "prefill", 0, 0, 0, 3), View(2, "prefill", 0, 0, 0, 0),
                                    View(3, "prefill", 0, 0, 0, 0), View(4, "decode", 0, 0)};
  EXPECT_THAT(PickMutations(v, 1), ElementsAre(2));  // idle, oldest first
  EXPECT_THAT(PickMutations(v, 5), ElementsAre(2, 3));
  v[2].mutating = true;
  v[1].ready = false;
  EXPECT_TRUE(PickMutations(v, 1).empty());  // only instance 1 is ready: it is the last
}

FunctionSpec PdSpec(const std::string& model) {
  FunctionSpec s;
  s.name = "chat";
  s.kind = FunctionKind::kLlm;
  s.command = {"./llm", "--model", model};
  s.model.name = model;
  s.llm = LlmSpec{true, 2, 3};
  return s;
}

TEST(LlmPoolsTest, ScalerConfigFromThePerfModelOrTheOptions) {
  LlmControllerOptions o;
  auto c = LlmPoolScalerConfig(PdSpec("llama2-7b"), 2, o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_GT(c->prefill_tokens_per_s_per_instance, c->decode_tokens_per_s_per_instance);
  EXPECT_GT(c->decode_tokens_per_s_per_instance, 0);
  EXPECT_EQ(c->min_prefill, 1);
  EXPECT_EQ(c->max_prefill, 2);
  EXPECT_EQ(c->max_decode, 3);  // never below the spec's pool size
  EXPECT_TRUE(c->allow_mutation);
  EXPECT_THAT(LlmPoolScalerConfig(PdSpec("gpt-9"), 4, o).status().message(), HasSubstr("gpt-9"));
  o.prefill_tokens_per_s = 1000;
  o.decode_tokens_per_s = 100;
  auto given = LlmPoolScalerConfig(PdSpec("gpt-9"), 4, o);  // bounds given: no model needed
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->decode_tokens_per_s_per_instance, 100);
  o.kv_usage_upper = 1.5;
  EXPECT_THAT(LlmPoolScalerConfig(PdSpec("gpt-9"), 4, o).status().message(),
              HasSubstr("kv_usage_upper"));
}

TEST(LlmPoolsTest, SpecForRoleAppendsTheFlagAndSetsTheEnvironment) {
  const FunctionSpec s = SpecForRole(PdSpec("llama2-7b"), "decode");
  EXPECT_THAT(s.command, ElementsAre("./llm", "--model", "llama2-7b", "--role", "decode"));
  EXPECT_EQ(s.env.at("SLUICE_LLM_ROLE"), "decode");
  EXPECT_EQ(SpecForRole(PdSpec("llama2-7b"), "").command.size(), 3u);
  EXPECT_TRUE(IsDisaggregated(PdSpec("x")));
  FunctionSpec colocated = PdSpec("x");
  colocated.llm.reset();
  EXPECT_FALSE(IsDisaggregated(colocated));
}

}  // namespace
}  // namespace sluice::runtime
