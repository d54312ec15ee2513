// Tests for QuartFunctionScaler: G/G/c sizing, immediate scale-out, hold before scale-in.
#include "core/quart/quart_function_scaler.h"

#include "gtest/gtest.h"

#include "core/quart/mmc_model.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

QuartFunctionScalerConfig Config() {
  QuartFunctionScalerConfig c;
  c.capacity_rps = 10;
  c.latency_target = absl::Milliseconds(300);
  c.hold = absl::Seconds(30);
  return c;
}

LoadSample At(int s, double rps, int queued = 0) {
  LoadSample x;
  x.at = kT0 + absl::Seconds(s);
  x.rps = rps;
  x.queued = queued;
  return x;
}

TEST(QuartFunctionScaler, SizesByTheQueueingModelAndHoldsBeforeScalingIn) {
  auto s = *QuartFunctionScaler::Create(Config());
  s->Observe(At(0, 40));
  const int need = ReplicasForTarget(40, 10, absl::Milliseconds(300), 1 << 20, 1.0, 0.2);
  EXPECT_EQ(s->Desired(kT0), need);
  EXPECT_GT(need, 4);  // more than the bare 40 / 10: the queueing wait counts
  s->Observe(At(1, 0));
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(1)), need);  // held
  EXPECT_EQ(s->NextWakeup(), kT0 + absl::Seconds(30));
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(30)), 0);  // hold over: back to min
  EXPECT_EQ(s->NextWakeup(), absl::InfiniteFuture());
}

TEST(QuartFunctionScaler, QueueCountsAsLoadAndBoundsApply) {
  QuartFunctionScalerConfig c = Config();
  c.min_instances = 1;
  c.max_instances = 3;
  auto s = *QuartFunctionScaler::Create(c);
  EXPECT_EQ(s->Desired(kT0), 1);
  s->Observe(At(0, 0, 100));
  EXPECT_EQ(s->Desired(kT0), 3);
}

TEST(QuartFunctionScaler, RejectsBadConfigNamingTheField) {
  QuartFunctionScalerConfig c = Config();
  c.latency_target = absl::ZeroDuration();
  auto s = QuartFunctionScaler::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("latency_target"), std::string::npos);
  c = Config();
  c.min_instances = 5;
  c.max_instances = 2;
  EXPECT_NE(QuartFunctionScaler::Create(c).status().message().find("max_instances"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::core
