#include "core/llm/llm_policies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(LlmPoliciesTest, NamesAreTheHeaderList) {
  EXPECT_THAT(LlmPolicySetNames(),
              ElementsAre("serverless-llm", "allcache", "distserve-full", "distserve-half",
                          "blitzscale", "blitzscale-network", "blitzscale-interference-free",
                          "blitzscale-live"));
  for (const std::string& name : LlmPolicySetNames()) {
    auto s = MakeLlmPolicySet(name, {});
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    EXPECT_EQ(s->name, name);
    EXPECT_EQ(s->scaler.allow_mutation, s->mutation) << name;
  }
}

TEST(LlmPoliciesTest, Defaults) {
  auto sllm = *MakeLlmPolicySet("serverless-llm", {});
  EXPECT_TRUE(sllm.autoscale);
  EXPECT_EQ(sllm.source, LoadSource::kSsdAndHostCache);
  EXPECT_EQ(sllm.host_cache, blitz::HostCachePolicy::kKeepAlive);
  EXPECT_EQ(sllm.keep_alive, absl::Minutes(5));
  EXPECT_EQ(sllm.live, LiveMode::kOff);
  EXPECT_EQ(sllm.scaler.scale_down_timeout, absl::Seconds(2));

  auto all = *MakeLlmPolicySet("allcache", {});
  EXPECT_EQ(all.host_cache, blitz::HostCachePolicy::kAllCache);
  EXPECT_EQ(all.live, LiveMode::kOff);

  auto full = *MakeLlmPolicySet("distserve-full", {});
  auto half = *MakeLlmPolicySet("distserve-half", {});
  EXPECT_FALSE(full.autoscale);
  EXPECT_FALSE(half.autoscale);
  EXPECT_EQ(full.fixed_gpu_fraction, 1.0);
  EXPECT_EQ(half.fixed_gpu_fraction, 0.5);

  auto blitz = *MakeLlmPolicySet("blitzscale", {});
  EXPECT_EQ(blitz.source, LoadSource::kNetworkMulticast);
  EXPECT_EQ(blitz.host_cache, blitz::HostCachePolicy::kOneCopy);
  EXPECT_TRUE(blitz.plan.prune_interference);
  EXPECT_TRUE(blitz.plan.multi_chain);
  EXPECT_EQ(blitz.live, LiveMode::kZigzag);
  EXPECT_TRUE(blitz.mutation);
  EXPECT_TRUE(blitz.scaler.allow_mutation);
}

TEST(LlmPoliciesTest, AblationsAddOneTechniqueEach) {
  auto net = *MakeLlmPolicySet("blitzscale-network", {});
  auto plan = *MakeLlmPolicySet("blitzscale-interference-free", {});
  auto live = *MakeLlmPolicySet("blitzscale-live", {});
  EXPECT_EQ(net.source, LoadSource::kNetworkMulticast);
  EXPECT_FALSE(net.plan.prune_interference);
  EXPECT_EQ(net.live, LiveMode::kOff);
  EXPECT_FALSE(net.mutation);
  EXPECT_TRUE(plan.plan.prune_interference);
  EXPECT_EQ(plan.live, LiveMode::kOff);
  EXPECT_FALSE(plan.mutation);
  EXPECT_TRUE(live.plan.prune_interference);
  EXPECT_EQ(live.live, LiveMode::kBestEffort);
  EXPECT_TRUE(live.mutation);
}

TEST(LlmPoliciesTest, ParamsApply) {
  auto s = MakeLlmPolicySet("serverless-llm",
                            {{"keep_alive_s", "60", 3}, {"scale_down_timeout_s", "5", 4},
                             {"window_s", "0.5", 5}, {"kv_usage_upper", "0.9", 6},
                             {"lower_fraction", "0.3", 7}, {"max_prefill", "8", 8},
                             {"prefill_tokens_per_s_per_instance", "12000", 9}},
                            "e.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->keep_alive, absl::Seconds(60));
  EXPECT_EQ(s->scaler.scale_down_timeout, absl::Seconds(5));
  EXPECT_EQ(s->scaler.window, absl::Milliseconds(500));
  EXPECT_EQ(s->scaler.kv_usage_upper, 0.9);
  EXPECT_EQ(s->scaler.lower_fraction, 0.3);
  EXPECT_EQ(s->scaler.max_prefill, 8);
  EXPECT_EQ(s->scaler.prefill_tokens_per_s_per_instance, 12000);
  auto half = MakeLlmPolicySet("distserve-half", {{"fixed_gpu_fraction", "0.25", 2}});
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->fixed_gpu_fraction, 0.25);
  auto blitz = MakeLlmPolicySet("blitzscale", {{"zigzag_time_limit_ms", "10", 2}});
  ASSERT_TRUE(blitz.ok());
  EXPECT_EQ(blitz->zigzag_time_limit_ms, 10);
}

TEST(LlmPoliciesTest, BadInputNamesFileLineAndKey) {
  auto unknown = MakeLlmPolicySet("blitzscale-turbo", {}, "e.yaml");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("blitzscale-turbo"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("serverless-llm"));

  auto bad_value = MakeLlmPolicySet("blitzscale", {{"kv_usage_upper", "1.5", 12}}, "e.yaml");
  EXPECT_THAT(bad_value.status().message(), HasSubstr("e.yaml:12"));
  EXPECT_THAT(bad_value.status().message(), HasSubstr("kv_usage_upper"));

  // keep_alive_s means nothing to a set without the keep-alive cache.
  auto foreign = MakeLlmPolicySet("blitzscale", {{"keep_alive_s", "60", 7}}, "e.yaml");
  EXPECT_THAT(foreign.status().message(), HasSubstr("e.yaml:7"));
  EXPECT_THAT(foreign.status().message(), HasSubstr("keep_alive_s"));

  auto bounds = MakeLlmPolicySet("serverless-llm",
                                 {{"min_decode", "5", 3}, {"max_decode", "2", 4}}, "e.yaml");
  EXPECT_THAT(bounds.status().message(), HasSubstr("e.yaml:4"));
  EXPECT_THAT(bounds.status().message(), HasSubstr("max_decode"));

  auto twice = MakeLlmPolicySet("allcache", {{"window_s", "1", 2}, {"window_s", "2", 3}}, "e.yaml");
  EXPECT_FALSE(twice.ok());
}

}  // namespace
}  // namespace sluice::core::llm
