// Cost of the GPU time held, worked by hand on one-hour runs: an exclusive instance at $2.48 per
// GPU-hour costs $2.48; a time-sliced one s x q of that; a scaled-out instance holds its GPU from
// placement (cold start included) to release; each node's GPUs carry their own price; and bad
// price tables are input errors naming the field.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "sim/engine/engine_test_util.h"

namespace sluice::sim {
namespace {

using core::SmQuota;
using testing::FakeFunction;
using testing::FakePolicyOptions;
using testing::RunFake;
using testing::SmallConfig;
using testing::Trace;

// One node of `gpus` GPUs at $2.48 per GPU-hour, one hour, one request at t = 0.
SimConfig HourConfig(SmQuota quota, int gpus = 1) {
  SimConfig c = SmallConfig(1, gpus);
  c.horizon = absl::Hours(1);
  c.sample_interval = absl::Seconds(60);
  c.gpu_price_per_hour = {2.48};
  c.functions = {FakeFunction("f0", quota, Trace("hour", {0}))};
  return c;
}

TEST(EngineCostTest, ExclusiveInstanceForAnHourCostsOneGpuHour) {
  auto perf = testing::MakeFakePerf();
  auto out = RunFake(HourConfig(SmQuota{1, 1}), FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const FunctionResult& f = out->result.functions[0];
  EXPECT_NEAR(f.held_gpu_seconds, 3600, 1e-9);
  EXPECT_NEAR(f.cost_usd, 2.48, 1e-12);
  EXPECT_NEAR(f.cost_per_1k_requests_usd, 2480, 1e-9);  // one request
  EXPECT_NEAR(out->result.cost_usd, 2.48, 1e-12);
  EXPECT_NEAR(out->result.cost_per_1k_requests_usd, 2480, 1e-9);
  EXPECT_NEAR(out->result.held_gpu_seconds, 3600, 1e-9);
  // The timeline carries the cost so far: $2.48 / 60 per minute.
  ASSERT_FALSE(out->result.timeline.empty());
  EXPECT_NEAR(out->result.timeline[0].cost_usd, 2.48 / 60, 1e-12);
}

TEST(EngineCostTest, TimeSlicedInstanceHoldsShareTimesQuota) {
  auto perf = testing::MakeFakePerf();
  auto out = RunFake(HourConfig(SmQuota{0.5, 0.5, 0.5}), FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->result.functions[0].held_gpu_seconds, 900, 1e-9);
  EXPECT_NEAR(out->result.cost_usd, 2.48 * 0.25, 1e-12);
  EXPECT_NEAR(out->result.gpu_seconds, 900, 1e-9);  // allocated share counts s x q as well
}

TEST(EngineCostTest, ScaledOutInstanceHoldsFromPlacementToRelease) {
  auto perf = testing::MakeFakePerf();
  FakePolicyOptions o;
  const absl::Time t0 = absl::UnixEpoch();
  // A second instance placed at 30 min (its 3 s cold start is held too), drained at 45 min.
  o.scripts = {{{t0 + absl::Minutes(30), 2}, {t0 + absl::Minutes(45), 1}}};
  auto out = RunFake(HourConfig(SmQuota{1, 1}, 2), std::move(o), *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->result.functions[0].cold_starts, 1);
  EXPECT_NEAR(out->result.functions[0].held_gpu_seconds, 3600 + 900, 1e-9);
  EXPECT_NEAR(out->result.cost_usd, 2.48 * 1.25, 1e-12);
}

TEST(EngineCostTest, EachNodeHasItsPrice) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig(2, 1);
  c.horizon = absl::Hours(1);
  c.sample_interval = absl::Seconds(60);
  c.gpu_price_per_hour = {1.0, 3.0};
  c.functions = {FakeFunction("a", SmQuota{1, 1}, Trace("node_a", {0})),
                 FakeFunction("b", SmQuota{1, 1}, Trace("node_b", {0, 1}))};
  auto out = RunFake(c, FakePolicyOptions{}, *perf);  // first fit: a on node 0, b on node 1
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->result.functions[0].cost_usd, 1.0, 1e-12);
  EXPECT_NEAR(out->result.functions[1].cost_usd, 3.0, 1e-12);
  EXPECT_NEAR(out->result.functions[1].cost_per_1k_requests_usd, 1500, 1e-9);
  EXPECT_NEAR(out->result.cost_per_1k_requests_usd, 4.0 / 3 * 1000, 1e-9);
}

TEST(EngineCostTest, NoPriceMeansNoCost) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = HourConfig(SmQuota{1, 1});
  c.gpu_price_per_hour.clear();
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->result.cost_usd, 0);
  EXPECT_NEAR(out->result.held_gpu_seconds, 3600, 1e-9);
}

TEST(EngineCostTest, BadPriceTablesAreInputErrors) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = HourConfig(SmQuota{1, 1});
  c.gpu_price_per_hour = {1.0, 2.0};  // two prices, one node
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("cluster.gpu_price_per_hour"), std::string::npos)
      << out.status();
  c.gpu_price_per_hour = {-1.0};
  out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("cluster.gpu_price_per_hour"), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace sluice::sim
