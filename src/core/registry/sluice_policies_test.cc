// The sluice registry entry: Dilu's parts with memory packing, start traits from params, the
// cached-start check reaching the scaler, Dilu's keys passing through, bad keys named.
#include "core/registry/sluice_policies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/hasgpu/testing/linear_latency.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<PolicySet>> Make(std::vector<PolicyParam> params) {
  return MakePolicySet("sluice", params, "exp.yaml");
}

class SluicePolicyTest : public testing::Test {
 protected:
  SluicePolicyTest() {
    f_.id = FunctionId(1);
    f_.profiled = {0.3, 0.6};
    f_.capacity_rps = 100;
    f_.latency = &latency_;
    f_.max_batch = 4;
    f_.memory = Bytes::GiB(4);
    f_.slo = absl::Milliseconds(100);
  }
  LinearLatency latency_;
  FunctionTraits f_;
  const absl::Time t0_ = absl::UnixEpoch();
};

TEST_F(SluicePolicyTest, DefaultsAreDiluPartsWithTheFastStartPath) {
  auto set = Make({});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->name(), "sluice");
  EXPECT_EQ((*set)->placement().name(), "sluice");
  EXPECT_EQ((*set)->QuotaFor(f_), f_.profiled);
  EXPECT_TRUE((*set)->work_conserving());
  const StartTraits st = (*set)->start_traits();
  EXPECT_TRUE(st.prestarted_pool);
  EXPECT_TRUE(st.wake_from_zero);
  EXPECT_EQ(st.unpark, absl::Milliseconds(5));  // Dilu's token period
  auto s = (*set)->MakeScaler(f_);
  EXPECT_EQ(s->name(), "sluice-tail");
  EXPECT_EQ(s->Desired(t0_), 0);
}

TEST_F(SluicePolicyTest, ParamsReachTheParts) {
  auto set = Make({{"memory_packing", "false", 2},
                   {"unpark_ms", "7", 3},
                   {"keep_alive_s", "60", 4},
                   {"period_ms", "10", 5},
                   {"wake_from_zero", "false", 6}});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->placement().name(), "dilu");
  EXPECT_EQ((*set)->start_traits().unpark, absl::Milliseconds(7));
  EXPECT_FALSE((*set)->start_traits().wake_from_zero);
  auto s = (*set)->MakeScaler(f_);
  s->Observe({t0_, 1, 0, 100, 0});
  EXPECT_EQ(s->Desired(t0_ + absl::Seconds(59)), 1);
  EXPECT_EQ(s->Desired(t0_ + absl::Seconds(60)), 0);
}

TEST_F(SluicePolicyTest, SlowCachedStartsAreKeptResident) {
  f_.cached_start = absl::Milliseconds(90);  // + 40 ms batch-1 latency > 80 ms
  auto set = Make({{"keep_alive_s", "20", 2}});
  ASSERT_TRUE(set.ok());
  auto s = (*set)->MakeScaler(f_);
  s->Observe({t0_, 1, 0, 100, 0});
  EXPECT_EQ(s->Desired(t0_ + absl::Hours(1)), 1);
}

TEST_F(SluicePolicyTest, BadParamsNameTheirLine) {
  auto set = Make({{"keep_alive_s", "-3", 7}});
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("exp.yaml:7"));
  set = Make({{"no_such_knob", "1", 9}});
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(set.status().message(), HasSubstr("no_such_knob"));
}

}  // namespace
}  // namespace sluice::core
