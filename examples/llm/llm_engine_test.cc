// LlmEngine under virtual time (ManualEnv): token timing equals the perf model's iteration times,
// continuous batching joins new requests mid-stream, the KV cache bounds admission, refusals name
// the field, text is deterministic and honours stop strings.
#include "llm_engine.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sim_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::examples {
namespace {

using ::testing::HasSubstr;

// A model with a fixed 10 ms iteration and a small KV cache, to test admission.
class FakeModel : public core::LlmPerfModel {
 public:
  explicit FakeModel(int64_t kv_tokens) {
    spec_.name = "fake";
    spec_.max_context_tokens = 1000;
    spec_.kv_bytes_per_token = common::Bytes(1);
    spec_.gpu_memory = common::Bytes(kv_tokens);
  }
  const core::LlmModelSpec& spec() const override { return spec_; }
  absl::Duration IterationTime(int64_t, int, int, int64_t) const override {
    return absl::Milliseconds(10);
  }

 private:
  core::LlmModelSpec spec_;
};

struct Trace {
  std::vector<absl::Time> token_times;
  std::string text, reason;
  int completion = -1;
};

GenJob Job(common::Env& env, Trace& t, int prompt, int max_tokens, uint64_t seed = 7) {
  GenJob j;
  j.prompt_tokens = prompt;
  j.max_tokens = max_tokens;
  j.seed = seed;
  j.on_token = [&env, &t](int, const std::string& s) {
    t.token_times.push_back(env.Now());
    t.text += s;
  };
  j.on_done = [&t](const std::string& r, int, int c) {
    t.reason = r;
    t.completion = c;
  };
  return j;
}

TEST(LlmEngineTest, TokenTimesFollowThePerfModel) {
  common::ManualEnv env;
  auto model = core::BuiltinLlmModel("llama2-7b");
  ASSERT_TRUE(model.ok());
  auto expected_model = core::BuiltinLlmModel("llama2-7b");
  LlmEngine engine(env, *std::move(model), {});
  Trace t;
  const absl::Time start = env.Now();
  ASSERT_TRUE(engine.Submit(Job(env, t, 1000, 4)).ok());
  env.Advance(absl::Seconds(10));
  ASSERT_EQ(t.token_times.size(), 4u);
  const core::LlmPerfModel& m = **expected_model;
  absl::Time want = start + m.PrefillTime(1000, 1);
  EXPECT_EQ(t.token_times[0], want);  // TTFT = one prefill iteration
  for (int i = 1; i < 4; ++i) {
    want += m.DecodeTime(1, 1000 + i);
    EXPECT_EQ(t.token_times[i], want) << "token " << i;
  }
  EXPECT_EQ(t.reason, "length");
  EXPECT_EQ(t.completion, 4);
  EXPECT_EQ(engine.kv_used_tokens(), 0);
}

TEST(LlmEngineTest, ContinuousBatchingJoinsARequestMidStream) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(10000), {});
  Trace a, b;
  const absl::Time start = env.Now();
  ASSERT_TRUE(engine.Submit(Job(env, a, 10, 10)).ok());
  env.Advance(absl::Milliseconds(35));  // a has 3 tokens, its 4th iteration is running
  ASSERT_TRUE(engine.Submit(Job(env, b, 10, 3, 8)).ok());
  env.Advance(absl::Seconds(1));
  ASSERT_EQ(b.token_times.size(), 3u);
  // b's prefill rides a's next iteration (starting at 40 ms), not a new batch after a ends.
  EXPECT_EQ(b.token_times[0] - start, absl::Milliseconds(50));
  EXPECT_EQ(engine.iterations(), 10);  // a's 10 iterations carried b's 3
}

TEST(LlmEngineTest, KvCacheBoundsAdmission) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(100), {});
  Trace a, b;
  ASSERT_TRUE(engine.Submit(Job(env, a, 50, 10)).ok());  // reserves 60 of 100
  ASSERT_TRUE(engine.Submit(Job(env, b, 30, 20)).ok());  // needs 50: waits for a
  env.Advance(absl::Milliseconds(5));
  EXPECT_EQ(engine.running(), 1);
  EXPECT_EQ(engine.waiting(), 1);
  EXPECT_LE(engine.kv_used_tokens(), engine.kv_capacity_tokens());
  env.Advance(absl::Seconds(1));
  ASSERT_EQ(a.token_times.size(), 10u);
  ASSERT_EQ(b.token_times.size(), 20u);
  EXPECT_GT(b.token_times[0], a.token_times.back());
}

TEST(LlmEngineTest, RefusesWhatCouldNeverFitNamingTheField) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(100), {});
  Trace t;
  absl::Status kv = engine.Submit(Job(env, t, 90, 20));
  EXPECT_EQ(kv.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kv.message(), HasSubstr("prompt: 90 prompt tokens"));
  EXPECT_THAT(kv.message(), HasSubstr("KV cache of 100 tokens"));
  auto real = core::BuiltinLlmModel("llama2-7b");
  LlmEngine big(env, *std::move(real), {});
  absl::Status ctx = big.Submit(Job(env, t, 5000, 16));
  EXPECT_THAT(ctx.message(), HasSubstr("context of 4096"));
  EXPECT_EQ(engine.Submit(Job(env, t, 1, 0)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.waiting() + engine.running(), 0);
}

TEST(LlmEngineTest, TextIsDeterministicAndStopsAtAStopString) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(10000), {});
  Trace a, b;
  ASSERT_TRUE(engine.Submit(Job(env, a, 5, 6, PromptSeed("hello"))).ok());
  ASSERT_TRUE(engine.Submit(Job(env, b, 5, 6, PromptSeed("hello"))).ok());
  env.Advance(absl::Seconds(1));
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.text, absl::StrCat(GeneratedToken(PromptSeed("hello"), 0),
                                 GeneratedToken(PromptSeed("hello"), 1),
                                 GeneratedToken(PromptSeed("hello"), 2),
                                 GeneratedToken(PromptSeed("hello"), 3),
                                 GeneratedToken(PromptSeed("hello"), 4),
                                 GeneratedToken(PromptSeed("hello"), 5)));
  Trace s;
  GenJob j = Job(env, s, 5, 6, PromptSeed("hello"));
  j.stop = {GeneratedToken(PromptSeed("hello"), 2)};
  ASSERT_TRUE(engine.Submit(std::move(j)).ok());
  env.Advance(absl::Seconds(1));
  EXPECT_EQ(s.reason, "stop");
  EXPECT_LE(s.completion, 2);
  EXPECT_EQ(CountPromptTokens("  a b\tc\n"), 3);
  EXPECT_EQ(CountPromptTokens(""), 1);
}

TEST(LlmEngineTest, AbortDropsEverythingAndTheEngineStaysUsable) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(100), {});
  Trace a, b, c;
  ASSERT_TRUE(engine.Submit(Job(env, a, 50, 10)).ok());
  ASSERT_TRUE(engine.Submit(Job(env, b, 30, 20)).ok());
  env.Advance(absl::Milliseconds(15));
  engine.Abort();
  env.Advance(absl::Seconds(1));
  EXPECT_EQ(a.token_times.size(), 1u);  // the one before Abort
  EXPECT_TRUE(b.token_times.empty());
  EXPECT_EQ(a.completion, -1);  // never reported done
  EXPECT_EQ(engine.kv_used_tokens(), 0);
  ASSERT_TRUE(engine.Submit(Job(env, c, 10, 2)).ok());
  env.Advance(absl::Seconds(1));
  EXPECT_EQ(c.completion, 2);
}

}  // namespace
}  // namespace sluice::examples

namespace sluice::examples {
namespace {

TEST(LlmEngineTest, CountsPrefilledAndGeneratedTokensAndQueuedPrompts) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(30), {});  // room for one 10 + 5 job
  Trace a, b, c;
  ASSERT_TRUE(engine.Submit(Job(env, a, 10, 5)).ok());
  ASSERT_TRUE(engine.Submit(Job(env, b, 20, 5)).ok());  // waits for KV
  EXPECT_EQ(engine.waiting_prompt_tokens(), 20);
  GenJob from_kv = Job(env, c, 7, 3);
  from_kv.from_kv = true;  // decoded from transferred KV: never counted as a prefill
  ASSERT_TRUE(engine.Submit(std::move(from_kv)).ok());
  EXPECT_EQ(engine.waiting_prompt_tokens(), 20);
  env.Advance(absl::Seconds(10));
  EXPECT_EQ(engine.prompt_tokens_total(), 30);
  EXPECT_EQ(engine.generated_tokens_total(), 5 + 5 + 2);  // from_kv starts at token 1
  EXPECT_EQ(engine.waiting_prompt_tokens(), 0);
}

TEST(LlmEngineTest, CancelDropsAJobWithoutCallbacksAndFreesItsKv) {
  common::ManualEnv env;
  LlmEngine engine(env, std::make_unique<FakeModel>(30), {});
  Trace a, b;
  GenJob ja = Job(env, a, 10, 5);
  ja.request_id = "a";
  GenJob jb = Job(env, b, 10, 5);
  jb.request_id = "b";
  ASSERT_TRUE(engine.Submit(std::move(ja)).ok());
  ASSERT_TRUE(engine.Submit(std::move(jb)).ok());
  env.Advance(absl::Milliseconds(25));  // both running, two tokens each
  EXPECT_EQ(engine.kv_used_tokens(), 30);
  EXPECT_TRUE(engine.Cancel("a"));
  EXPECT_EQ(engine.kv_used_tokens(), 15);
  EXPECT_FALSE(engine.Cancel("a"));
  EXPECT_FALSE(engine.Cancel("nope"));
  env.Advance(absl::Seconds(1));
  EXPECT_EQ(a.completion, -1);  // never finished, never told
  EXPECT_EQ(a.token_times.size(), 2u);
  EXPECT_EQ(b.completion, 5);
  EXPECT_EQ(engine.kv_used_tokens(), 0);
}

}  // namespace
}  // namespace sluice::examples
