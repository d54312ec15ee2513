// kserve, fast-gshare and has-gpu registry entries: they build, their parts are the ones the
// paper describes, params reach them, and bad params name the line.
#include "core/registry/hasgpu_policies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/hasgpu/hybrid_autoscaler.h"
#include "core/hasgpu/testing/linear_latency.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<PolicySet> Make(std::string_view name, std::vector<PolicyParam> params = {}) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string Error(std::string_view name, std::vector<PolicyParam> params) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_FALSE(s.ok());
  return std::string(s.status().message());
}

class HasGpuPoliciesTest : public testing::Test {
 protected:
  HasGpuPoliciesTest() {
    f_.id = FunctionId(1);
    f_.profiled = {0.3, 0.6};
    f_.capacity_rps = 100;
    f_.latency = &latency_;
    f_.max_batch = 4;
    f_.memory = Bytes::GiB(4);
  }
  LinearLatency latency_;
  FunctionTraits f_;
};

TEST_F(HasGpuPoliciesTest, KserveIsExclusiveWithKpa) {
  auto set = Make("kserve");
  EXPECT_EQ(set->QuotaFor(f_), (SmQuota{1, 1, 1}));
  EXPECT_EQ(set->placement().name(), "exclusive");
  EXPECT_EQ(set->MakeScaler(f_)->name(), "kpa");
  EXPECT_EQ(set->MakeHybridScaler(f_), nullptr);
  EXPECT_FALSE(set->work_conserving());
  // Auto target: saturated concurrency = 100 rps x 40 ms (BatchLatency(1, 1, 1)) = 4, x 0.7.
  auto scaler = set->MakeScaler(f_);
  const absl::Time t0 = absl::UnixEpoch();
  scaler->Observe({t0, 250, 1, 100, 0});  // concurrency 10 -> ceil(10 / 2.8) = 4
  EXPECT_EQ(scaler->Desired(t0), 4);
  // min_replicas 0 allows scale to zero.
  auto zero = Make("kserve", {{"min_replicas", "0", 2}})->MakeScaler(f_);
  EXPECT_EQ(zero->Desired(t0), 0);
}

TEST_F(HasGpuPoliciesTest, FastGshareHasFixedSpatioTemporalQuota) {
  auto set = Make("fast-gshare", {{"sm", "0.4", 2}, {"time_quota", "0.5", 3}});
  EXPECT_EQ(set->QuotaFor(f_), (SmQuota{0.4, 0.4, 0.5}));
  EXPECT_EQ(set->placement().name(), "fast-gshare");
  EXPECT_EQ(set->MakeHybridScaler(f_), nullptr);
  // Derived: every (s, q) serves 100 s q per unit of s x q here (LinearLatency): the first, s 0.1.
  const SmQuota derived = Make("fast-gshare")->QuotaFor(f_);
  EXPECT_TRUE(ValidateQuota(derived).ok());
  EXPECT_LT(derived.time_quota * derived.limit, 1.0);
  // fast-gs+ still folds q into the share, without a time quota.
  EXPECT_EQ(Make("fast-gs+", {{"time_quota", "0.5", 2}})->QuotaFor(f_), (SmQuota{0.3, 0.3, 1}));
}

TEST_F(HasGpuPoliciesTest, HasGpuDrivesTheHybridScaler) {
  auto set = Make("has-gpu", {{"alpha", "0.9", 2}, {"cooldown_s", "10", 3}});
  EXPECT_EQ(set->placement().name(), "has-gpu");
  EXPECT_FALSE(set->work_conserving());
  std::unique_ptr<HybridScaler> h = set->MakeHybridScaler(f_);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->name(), "has-gpu");
  auto* hybrid = static_cast<HybridAutoscaler*>(h.get());
  EXPECT_DOUBLE_EQ(hybrid->config().alpha, 0.9);
  EXPECT_EQ(hybrid->config().cooldown, absl::Seconds(10));
  // Initial (s, q): the cheapest serving r_min = 1 rps: 100 s q >= 1 -> (0.1, 0.1).
  const SmQuota q = set->QuotaFor(f_);
  EXPECT_NEAR(q.limit, 0.1, 1e-9);
  EXPECT_NEAR(q.time_quota, 0.1, 1e-9);
  FunctionTraits training = f_;
  training.kind = FunctionKind::kTraining;
  EXPECT_EQ(set->MakeHybridScaler(training), nullptr);
  EXPECT_EQ(set->QuotaFor(training), (SmQuota{0.6, 0.6, 1}));
}

TEST_F(HasGpuPoliciesTest, BadParamsNameTheLine) {
  EXPECT_THAT(Error("has-gpu", {{"alpha", "0.5", 4}, {"beta", "0.6", 5}}),
              HasSubstr("exp.yaml:5"));
  EXPECT_THAT(Error("has-gpu", {{"quota_step", "0", 6}}), HasSubstr("exp.yaml:6"));
  EXPECT_THAT(Error("has-gpu", {{"kalman_d", "0", 7}}), HasSubstr("'kalman_d'"));
  EXPECT_THAT(Error("kserve", {{"panic_window_s", "90", 8}}), HasSubstr("exp.yaml:8"));
  EXPECT_THAT(Error("kserve", {{"max_scale_down_rate", "0.5", 9}}), HasSubstr(":9"));
  EXPECT_THAT(Error("fast-gshare", {{"time_quota", "1.5", 3}}), HasSubstr("exp.yaml:3"));
  EXPECT_THAT(Error("fast-gshare", {{"target_concurrency", "1", 11}}), HasSubstr(":11"));
}

}  // namespace
}  // namespace sluice::core
