// Unit tests for the PID replica corrector.
#include "core/quart/pid_corrector.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

PidCorrector Make(PidConfig c = {}) {
  auto p = PidCorrector::Create(c);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

TEST(PidCorrector, FirstStepIsProportionalOnly) {
  PidCorrector pid = Make();
  EXPECT_DOUBLE_EQ(pid.Update(1.0, absl::InfiniteDuration()), 2.0);  // kp x 100 % excess
}

TEST(PidCorrector, TermsAddUp) {
  PidCorrector pid = Make();
  pid.Update(1.0, absl::InfiniteDuration());
  // e 0.5 over 1 s: P 1.0, I 0.3 x 0.5, D 0.1 x (0.5 - 1) / 1.
  EXPECT_NEAR(pid.Update(0.5, absl::Seconds(1)), 1.0 + 0.15 - 0.05, 1e-12);
}

TEST(PidCorrector, ErrorIsClippedAndOutputBounded) {
  PidCorrector pid = Make();
  EXPECT_DOUBLE_EQ(pid.Update(INFINITY, absl::Seconds(1)), 8.0);  // kp x 4, within max_step
  PidConfig c;
  c.max_step = 3;
  PidCorrector small = Make(c);
  EXPECT_DOUBLE_EQ(small.Update(100.0, absl::Seconds(1)), 3.0);
  // e clipped at -1: P -2, I 0 (one-sided integral), D 0.1 x -5.
  EXPECT_NEAR(small.Update(-100.0, absl::Seconds(1)), -2.0 - 0.5, 1e-12);
}

TEST(PidCorrector, AntiWindupStopsIntegratingWhenSaturated) {
  PidConfig c;
  c.max_step = 2.5;
  PidCorrector pid = Make(c);
  for (int i = 0; i < 100; ++i)
    pid.Update(1.0, absl::Seconds(1));
  // P alone is 2.0; 2.0 + 0.3 I > 2.5 once I > 5/3, so the integral stops there, not at 10.
  EXPECT_LE(pid.integral(), 2.0);
  // The error reverses: the output follows within one step instead of unwinding 100 s.
  EXPECT_LT(pid.Update(-0.5, absl::Seconds(1)), 0.0);
}

TEST(PidCorrector, HoldFreezesTheIntegral) {
  PidCorrector pid = Make();
  pid.Update(1.0, absl::Seconds(1));
  const double before = pid.integral();
  pid.Update(1.0, absl::Seconds(1), /*hold_integral=*/true);
  EXPECT_EQ(pid.integral(), before);
  pid.Reset();
  EXPECT_EQ(pid.integral(), 0.0);
}

TEST(PidCorrector, TimeUnderTargetDoesNotDelayTheNextScaleUp) {
  PidCorrector pid = Make();
  for (int i = 0; i < 60; ++i)
    pid.Update(-0.5, absl::Seconds(1));
  EXPECT_EQ(pid.integral(), 0.0);
  // A mild overload right after: kp x 0.5 + ki x 0.5 + kd x 1.0 = 1.25 replicas.
  EXPECT_NEAR(pid.Update(0.5, absl::Seconds(1)), 1.0 + 0.15 + 0.1, 1e-12);
  PidConfig two;
  two.two_sided_integral = true;
  PidCorrector symmetric = Make(two);
  for (int i = 0; i < 60; ++i)
    symmetric.Update(-0.5, absl::Seconds(1));
  EXPECT_EQ(symmetric.integral(), -10.0);
  EXPECT_LT(symmetric.Update(0.5, absl::Seconds(1)), 0.0);  // the banked -3 replicas win
}

TEST(PidCorrector, IntegralClamped) {
  PidConfig c;
  c.kp = 0;
  c.max_step = 100;
  PidCorrector pid = Make(c);
  for (int i = 0; i < 100; ++i)
    pid.Update(1.0, absl::Seconds(1));
  EXPECT_DOUBLE_EQ(pid.integral(), 10.0);
}

TEST(PidCorrector, RejectsBadGainsNamingTheField) {
  PidConfig c;
  c.ki = -1;
  EXPECT_NE(PidCorrector::Create(c).status().message().find("'ki'"), std::string::npos);
  c = {};
  c.max_step = 0;
  EXPECT_NE(PidCorrector::Create(c).status().message().find("'max_step'"), std::string::npos);
  c = {};
  c.kd = NAN;
  EXPECT_FALSE(PidCorrector::Create(c).ok());
}

}  // namespace
}  // namespace sluice::core
