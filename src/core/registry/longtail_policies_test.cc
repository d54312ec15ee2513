// The per-request registry entry: it builds with the parts its header names, params reach the
// scaler (keep-alive, min, share), the name does not collide, and bad params name their line.
#include "core/registry/longtail_policies.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/hasgpu/testing/linear_latency.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<PolicySet> Make(std::vector<PolicyParam> params = {}) {
  auto s = MakePolicySet("per-request", params, "exp.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

class PerRequestPolicyTest : public testing::Test {
 protected:
  PerRequestPolicyTest() {
    f_.id = FunctionId(1);
    f_.profiled = {0.3, 0.6};
    f_.capacity_rps = 100;
    f_.latency = &latency_;
    f_.max_batch = 4;
    f_.memory = Bytes::GiB(4);
  }
  LinearLatency latency_;
  FunctionTraits f_;
  const absl::Time t0_ = absl::UnixEpoch();
};

TEST_F(PerRequestPolicyTest, DefaultsArePackedRequestSharesAndTenMinuteKeepAlive) {
  auto set = Make();
  EXPECT_EQ(set->name(), "per-request");
  EXPECT_EQ(set->QuotaFor(f_), (SmQuota{0.3, 0.3, 1}));
  EXPECT_EQ(set->placement().name(), "per-request");
  EXPECT_FALSE(set->work_conserving());
  auto s = set->MakeScaler(f_);
  EXPECT_EQ(s->name(), "per-request");
  EXPECT_EQ(s->Desired(t0_), 0);  // scales to zero by default
  // Batch-1 latency at share 0.3 is 40 ms (LinearLatency): 100 rps -> 4 concurrent requests.
  s->Observe({t0_, 100, 0, 100, 0});
  EXPECT_EQ(s->Desired(t0_), 4);
  s->Observe({t0_ + absl::Seconds(1), 0, 4, 100, 0});  // idle from here on
  EXPECT_EQ(s->Desired(t0_ + absl::Minutes(10) - absl::Nanoseconds(1)), 4);
  EXPECT_EQ(s->Desired(t0_ + absl::Minutes(10)), 0);
}

TEST_F(PerRequestPolicyTest, ParamsReachTheParts) {
  auto set = Make({{"keep_alive_s", "5", 2}, {"min_instances", "1", 3}, {"share", "whole", 4}});
  EXPECT_EQ(set->QuotaFor(f_), (SmQuota{1, 1, 1}));
  EXPECT_EQ(set->placement().name(), "exclusive");
  auto s = set->MakeScaler(f_);
  EXPECT_EQ(s->Desired(t0_), 1);
  // Batch 1 uses at most a quarter of the SMs (LinearLatency): 40 ms even on a whole GPU.
  s->Observe({t0_, 25, 1, 100, 0});  // 25 rps x 40 ms: 1 concurrent request
  EXPECT_EQ(s->Desired(t0_), 1);
  s->Observe({t0_, 125, 1, 100, 0});  // 5
  EXPECT_EQ(s->Desired(t0_ + absl::Seconds(4)), 5);
  EXPECT_EQ(s->Desired(t0_ + absl::Seconds(5)), 1);
  EXPECT_EQ(Make({{"share", "limit", 2}})->QuotaFor(f_), (SmQuota{0.6, 0.6, 1}));
}

TEST_F(PerRequestPolicyTest, NamesDoNotCollideAndKserveStays) {
  const std::vector<std::string> known = KnownPolicies();
  EXPECT_EQ(std::count(known.begin(), known.end(), "per-request"), 1);
  EXPECT_EQ(std::count(known.begin(), known.end(), "kserve"), 1);
  EXPECT_EQ(MakePolicySet("kserve", {}, "x.yaml").value()->MakeScaler(f_)->name(), "kpa");
}

TEST_F(PerRequestPolicyTest, BadParamsNameTheirLine) {
  auto bad = MakePolicySet("per-request", std::vector<PolicyParam>{{"share", "half", 7}},
                           "exp.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("exp.yaml:7"));
  EXPECT_THAT(bad.status().message(), HasSubstr("share"));
  bad = MakePolicySet("per-request", std::vector<PolicyParam>{{"keep_alive_s", "-1", 3}},
                      "exp.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("exp.yaml:3"));
  bad = MakePolicySet("per-request", std::vector<PolicyParam>{{"keepalive", "1", 4}}, "exp.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("keepalive"));
}

}  // namespace
}  // namespace sluice::core
