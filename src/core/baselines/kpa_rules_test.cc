// KpaScaler, one test per Knative rule (knative.dev/serving autoscaler.go, config-autoscaler
// defaults): the defaults themselves, the 60 s stable and 6 s panic windows, the 200 % panic
// threshold on the rounded-up panic count, scale to zero after the stable window plus the 30 s
// grace (restarted when load returns), and the activator-style wake from zero.
#include "core/baselines/kpa_scaler.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch() + absl::Hours(1);

absl::Time At(double s) { return kT0 + absl::Seconds(s); }

// Target 1 concurrent request per instance (x utilisation 1), request latency 1 s: c = rps.
KpaConfig Unit() {
  KpaConfig c;
  c.target_concurrency = 1;
  c.target_utilization = 1;
  c.request_latency = absl::Seconds(1);
  return c;
}

std::unique_ptr<KpaScaler> Make(KpaConfig c) {
  auto s = KpaScaler::Create(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

TEST(KpaRulesTest, DefaultsAreKnatives) {
  const KpaConfig c;
  EXPECT_EQ(c.stable_window, absl::Seconds(60));
  EXPECT_EQ(c.panic_window, absl::Seconds(6));
  EXPECT_DOUBLE_EQ(c.panic_threshold, 2.0);
  EXPECT_EQ(c.scale_to_zero_grace, absl::Seconds(30));
  EXPECT_DOUBLE_EQ(c.target_utilization, 0.7);
  EXPECT_DOUBLE_EQ(c.max_scale_down_rate, 2);
  EXPECT_DOUBLE_EQ(c.max_scale_up_rate, 1000);
}

// One sample of 120 at t = 0 (120 ready: no panic), then zeros: the stable mean over the
// samples in (t - 60, t] holds it until t = 59 (120 / 60 = 2 instances) and drops it at t = 60.
// The scale-down rate limit is lifted so that the window alone decides.
TEST(KpaRulesTest, StableWindowIsSixtySeconds) {
  KpaConfig c = Unit();
  c.max_scale_down_rate = 1e6;
  auto s = Make(c);
  s->Observe({At(0), 120, 120, 0, 0});
  EXPECT_FALSE(s->in_panic());
  for (int t = 1; t < 60; ++t)
    s->Observe({At(t), 0, 120, 0, 0});
  EXPECT_EQ(s->Desired(At(59)), 2);
  s->Observe({At(60), 0, 120, 0, 0});
  EXPECT_EQ(s->Desired(At(60)), 1);  // min_instances
}

// Six samples of 12 after a quiet minute: the panic window (6 s) sees 12 -> 12 pods at once
// (panic: 12 / 1 ready >= 2), while the stable mean is only (54 x 0.5 + 72) / 60 -> 2.
TEST(KpaRulesTest, PanicWindowIsSixSecondsAndActsAtOnce) {
  auto s = Make(Unit());
  for (int t = 0; t < 60; ++t)
    s->Observe({At(t), 0.5, 1, 0, 0});
  for (int t = 60; t < 66; ++t)
    s->Observe({At(t), 12, 1, 0, 0});
  EXPECT_TRUE(s->in_panic());
  EXPECT_EQ(s->Desired(At(65)), 12);
  // Never scales down while panicking, though the panic window is back to 0.5.
  for (int t = 66; t < 80; ++t)
    s->Observe({At(t), 0.5, 12, 0, 0});
  EXPECT_EQ(s->Desired(At(79)), 12);
}

// ready = 2: panic concurrency 3.1 rounds up to 4 pods = 200 % of ready -> panic; 2.9 -> 3
// pods = 150 % -> not.
TEST(KpaRulesTest, PanicThresholdIsTwoHundredPercentOfTheRoundedCount) {
  auto over = Make(Unit());
  over->Observe({At(0), 3.1, 2, 0, 0});
  EXPECT_TRUE(over->in_panic());
  auto under = Make(Unit());
  under->Observe({At(0), 2.9, 2, 0, 0});
  EXPECT_FALSE(under->in_panic());
}

// min 0: the last request at t = 0 keeps the stable mean above 0 until t = 60; the grace then
// runs 30 s. Load returning during the grace cancels it; the next zero starts a new grace.
TEST(KpaRulesTest, ScaleToZeroAfterStableWindowPlusGraceRestartedByLoad) {
  KpaConfig c = Unit();
  c.min_instances = 0;
  auto s = Make(c);
  s->Observe({At(0), 1, 1, 0, 0});
  for (int t = 1; t <= 70; ++t)
    s->Observe({At(t), 0, 1, 0, 0});
  EXPECT_EQ(s->NextWakeup(), At(60) + absl::Seconds(30));
  EXPECT_EQ(s->Desired(At(89)), 1);
  s->Observe({At(80), 1, 1, 0, 0});  // load again within the grace
  EXPECT_EQ(s->NextWakeup(), absl::InfiniteFuture());
  EXPECT_EQ(s->Desired(At(95)), 1);
  for (int t = 81; t <= 141; ++t)
    s->Observe({At(t), 0, 1, 0, 0});
  EXPECT_EQ(s->NextWakeup(), At(140) + absl::Seconds(30));
  EXPECT_EQ(s->Desired(At(169)), 1);
  EXPECT_EQ(s->Desired(At(170)), 0);
}

// At zero for an hour, one request held by the activator (queued, no instance): the next
// evaluation wants an instance, although the stable mean is 1/60 of a request.
TEST(KpaRulesTest, HeldRequestWakesFromZeroAtTheNextEvaluation) {
  KpaConfig c = Unit();
  c.min_instances = 0;
  c.target_concurrency = 10;
  auto s = Make(c);
  for (int t = 0; t < 3600; ++t)
    s->Observe({At(t), 0, 0, 0, 0});
  EXPECT_EQ(s->Desired(At(3600)), 0);
  s->Observe({At(3600), 0, 0, 0, 1});
  EXPECT_EQ(s->Desired(At(3600)), 1);
}

}  // namespace
}  // namespace sluice::core
