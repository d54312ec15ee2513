#include "core/llm/llm_autoscaler.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core::llm {
namespace {

using ::testing::HasSubstr;

absl::Time T(double s) { return absl::UnixEpoch() + absl::Seconds(s); }

LlmScalerConfig Config() {
  LlmScalerConfig c;
  c.prefill_tokens_per_s_per_instance = 1000;
  c.decode_tokens_per_s_per_instance = 100;
  c.min_prefill = 1;
  c.max_prefill = 16;
  c.min_decode = 1;
  c.max_decode = 16;
  return c;
}

LlmLoad Load(double t, double prefill, int np, double decode = 0, int nd = 1, double kv = 0) {
  LlmLoad l;
  l.now = T(t);
  l.prefill_tokens_per_s = prefill;
  l.decode_tokens_per_s = decode;
  l.kv_usage = kv;
  l.prefill_instances = np;
  l.decode_instances = nd;
  return l;
}

TEST(ValidateScalerConfigTest, NamesTheField) {
  EXPECT_TRUE(ValidateScalerConfig(Config()).ok());
  struct Case {
    void (*mutate)(LlmScalerConfig&);
    const char* field;
  };
  const Case cases[] = {
      {[](LlmScalerConfig& c) { c.window = absl::ZeroDuration(); }, "window"},
      {[](LlmScalerConfig& c) { c.scale_down_timeout = -absl::Seconds(1); }, "scale_down_timeout"},
      {[](LlmScalerConfig& c) { c.prefill_tokens_per_s_per_instance = 0; },
       "prefill_tokens_per_s_per_instance"},
      {[](LlmScalerConfig& c) { c.decode_tokens_per_s_per_instance = NAN; },
       "decode_tokens_per_s_per_instance"},
      {[](LlmScalerConfig& c) { c.kv_usage_upper = 1.5; }, "kv_usage_upper"},
      {[](LlmScalerConfig& c) { c.lower_fraction = 1; }, "lower_fraction"},
      {[](LlmScalerConfig& c) { c.min_prefill = -1; }, "min_prefill"},
      {[](LlmScalerConfig& c) { c.max_decode = 0; }, "max_decode"},
      {[](LlmScalerConfig& c) { c.min_decode = 5, c.max_decode = 4; }, "max_decode"},
  };
  for (const Case& k : cases) {
    LlmScalerConfig c = Config();
    k.mutate(c);
    const absl::Status s = ValidateScalerConfig(c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << k.field;
    EXPECT_THAT(s.message(), HasSubstr(k.field));
  }
}

// Bounds profiled from the perf model: 80 % of a saturated instance; set bounds are kept; a longer
// typical context fits fewer sequences in the KV cache, so the decode bound falls.
TEST(FillProfiledBoundsTest, EightyPercentOfASaturatedInstanceAndKeepsSetBounds) {
  auto m = BuiltinLlmModel("llama2-7b");
  ASSERT_TRUE(m.ok()) << m.status();
  const LlmBoundsShape shape{1024, 64, 4096, 256};
  LlmScalerConfig c = FillProfiledBounds({}, **m, shape);
  const double prefill_s = absl::ToDoubleSeconds((*m)->PrefillTime(4096, 4));
  EXPECT_NEAR(c.prefill_tokens_per_s_per_instance, 0.8 * 4096 / prefill_s, 1e-6);
  EXPECT_GT(c.decode_tokens_per_s_per_instance, 0);
  LlmScalerConfig set;
  set.prefill_tokens_per_s_per_instance = 7;
  set.decode_tokens_per_s_per_instance = 9;
  LlmScalerConfig kept = FillProfiledBounds(set, **m, shape);
  EXPECT_EQ(kept.prefill_tokens_per_s_per_instance, 7);
  EXPECT_EQ(kept.decode_tokens_per_s_per_instance, 9);
  LlmScalerConfig long_ctx = FillProfiledBounds({}, **m, {30000, 64, 4096, 256});
  EXPECT_LT(long_ctx.decode_tokens_per_s_per_instance, c.decode_tokens_per_s_per_instance);
}

TEST(LlmAutoscalerTest, NoObservationNoChange) {
  LlmAutoscaler a(Config());
  const LlmScaleDecision d = a.Decide(T(0));
  EXPECT_EQ(d.prefill_delta, 0);
  EXPECT_EQ(d.decode_delta, 0);
}

TEST(LlmAutoscalerTest, ScalesOutToTheDemandAtOnce) {
  LlmAutoscaler a(Config());
  a.Observe(Load(0, 4500, 1, 50, 1));
  const LlmScaleDecision d = a.Decide(T(0));
  EXPECT_EQ(d.prefill_delta, 4);  // ceil(4500 / 1000) = 5 instances
  EXPECT_EQ(d.decode_delta, 0);
}

TEST(LlmAutoscalerTest, AveragesOverTheWindowAndDropsOldSamples) {
  LlmAutoscaler a(Config());  // 1 s window
  a.Observe(Load(0.0, 9000, 2));
  a.Observe(Load(1.5, 0, 2));
  a.Observe(Load(2.0, 3000, 2));  // the window (1.0, 2.0] holds 0 and 3000
  EXPECT_EQ(a.Decide(T(2.0)).prefill_delta, 0);  // mean 1500 -> 2 instances
  a.Observe(Load(2.2, 5000, 2));                 // mean (0 + 3000 + 5000) / 3 = 2667
  EXPECT_EQ(a.Decide(T(2.2)).prefill_delta, 1);
}

TEST(LlmAutoscalerTest, ScaleOutRespectsMax) {
  LlmScalerConfig c = Config();
  c.max_prefill = 3;
  LlmAutoscaler a(c);
  a.Observe(Load(0, 1e6, 1));
  EXPECT_EQ(a.Decide(T(0)).prefill_delta, 2);
}

TEST(LlmAutoscalerTest, AboveMaxDrainsToMax) {
  LlmScalerConfig c = Config();
  c.max_decode = 2;
  LlmAutoscaler a(c);
  a.Observe(Load(0, 500, 1, 1000, 5));
  EXPECT_EQ(a.Decide(T(0)).decode_delta, -3);
}

TEST(LlmAutoscalerTest, BelowMinScalesOutToMin) {
  LlmScalerConfig c = Config();
  c.min_prefill = 2;
  LlmAutoscaler a(c);
  a.Observe(Load(0, 0, 0));
  EXPECT_EQ(a.Decide(T(0)).prefill_delta, 2);
}

TEST(LlmAutoscalerTest, ScalesInOneStepPerTimeout) {
  LlmAutoscaler a(Config());  // 2 s timeout, lower bound 500 tokens/s per instance
  int n = 4;
  std::vector<double> scale_in_times;
  for (double t = 0; t <= 7.01; t += 0.25) {
    a.Observe(Load(t, 100, n));
    const int d = a.Decide(T(t)).prefill_delta;
    if (d < 0)
      scale_in_times.push_back(t);
    n += d;
  }
  EXPECT_THAT(scale_in_times, ::testing::ElementsAre(2.0, 4.0, 6.0));
  EXPECT_EQ(n, 1);  // min_prefill
}

TEST(LlmAutoscalerTest, LoadBackAboveLowerBoundResetsTheTimer) {
  LlmAutoscaler a(Config());
  a.Observe(Load(0, 100, 2));
  EXPECT_EQ(a.Decide(T(0)).prefill_delta, 0);
  EXPECT_EQ(a.NextWakeup(), T(2));
  a.Observe(Load(1.5, 1900, 2));  // 950 per instance: not below the lower bound (500)
  EXPECT_EQ(a.Decide(T(1.5)).prefill_delta, 0);
  EXPECT_EQ(a.NextWakeup(), absl::InfiniteFuture());
  a.Observe(Load(3.0, 100, 2));
  EXPECT_EQ(a.Decide(T(3.0)).prefill_delta, 0);
  a.Observe(Load(4.9, 100, 2));
  EXPECT_EQ(a.Decide(T(4.9)).prefill_delta, 0);  // low only since 3.0
  a.Observe(Load(5.0, 100, 2));
  EXPECT_EQ(a.Decide(T(5.0)).prefill_delta, -1);
}

TEST(LlmAutoscalerTest, KvUsageTriggersDecodeScaleOut) {
  LlmAutoscaler a(Config());
  a.Observe(Load(0, 500, 1, 100, 4, 0.95));  // tokens fit 1 instance; KV does not
  EXPECT_EQ(a.Decide(T(0)).decode_delta, 1);  // ceil(4 x 0.95 / 0.85) = 5
}

TEST(LlmAutoscalerTest, NoScaleInThatWouldPassTheKvBound) {
  LlmScalerConfig c = Config();
  c.lower_fraction = 0.9;
  LlmAutoscaler a(c);
  for (double t = 0; t < 10; t += 1) {
    a.Observe(Load(t, 500, 1, 10, 2, 0.7));  // below both lower bounds, but 0.7 x 2 > 0.85
    EXPECT_EQ(a.Decide(T(t)).decode_delta, 0) << t;
  }
}

TEST(LlmAutoscalerTest, DecideTwiceDoesNotCountTheShortfallTwice) {
  LlmAutoscaler a(Config());
  a.Observe(Load(0, 3000, 1));
  EXPECT_EQ(a.Decide(T(0)).prefill_delta, 2);
  EXPECT_EQ(a.Decide(T(0.1)).prefill_delta, 0);
}

TEST(LlmAutoscalerTest, MutationTakesSparePrefillInstancesFirst) {
  LlmScalerConfig c = Config();
  c.allow_mutation = true;
  LlmAutoscaler a(c);
  a.Observe(Load(0, 1500, 5, 700, 2));  // prefill needs 2 of 5; decode needs 7
  const LlmScaleDecision d = a.Decide(T(0));
  EXPECT_EQ(d.mutate_prefill_to_decode, 3);
  EXPECT_EQ(d.decode_delta, 2);
  EXPECT_EQ(d.prefill_delta, 0);
}

TEST(LlmAutoscalerTest, MutationCoversTheWholeDemandWhenItCan) {
  LlmScalerConfig c = Config();
  c.allow_mutation = true;
  LlmAutoscaler a(c);
  a.Observe(Load(0, 100, 6, 300, 2));
  const LlmScaleDecision d = a.Decide(T(0));
  EXPECT_EQ(d.mutate_prefill_to_decode, 1);
  EXPECT_EQ(d.decode_delta, 0);
}

TEST(LlmAutoscalerTest, NoMutationWithoutSparePrefillOrPermission) {
  LlmScalerConfig c = Config();
  c.allow_mutation = true;
  LlmAutoscaler busy(c);
  busy.Observe(Load(0, 2600, 5, 300, 2));  // 520 per instance: not below the lower bound
  LlmScaleDecision d = busy.Decide(T(0));
  EXPECT_EQ(d.mutate_prefill_to_decode, 0);
  EXPECT_EQ(d.decode_delta, 1);
  LlmAutoscaler off(Config());
  off.Observe(Load(0, 100, 6, 300, 2));
  d = off.Decide(T(0));
  EXPECT_EQ(d.mutate_prefill_to_decode, 0);
  EXPECT_EQ(d.decode_delta, 1);
}

TEST(LlmAutoscalerTest, MutationKeepsMinPrefill) {
  LlmScalerConfig c = Config();
  c.allow_mutation = true;
  c.min_prefill = 3;
  LlmAutoscaler a(c);
  a.Observe(Load(0, 0, 4, 1000, 1));
  const LlmScaleDecision d = a.Decide(T(0));
  EXPECT_EQ(d.mutate_prefill_to_decode, 1);
  EXPECT_EQ(d.decode_delta, 8);
}

}  // namespace
}  // namespace sluice::core::llm
