// Fluid mode's queue approximation against closed forms: P(wait) (Erlang C), M/M/1 and M/M/c
// waits (exact there), Pollaczek-Khinchine's M/D/1 mean, and the overload case.
#include "sim/engine/fluid_queue.h"

#include <cmath>

#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

TEST(FluidQueueTest, WaitProbabilityIsErlangC) {
  EXPECT_NEAR(ApproxWait(1, 7, 0.1, 1, 1).p_wait, 0.7, 1e-12);  // M/M/1: P(wait) = rho
  EXPECT_NEAR(ApproxWait(2, 10, 0.1, 1, 1).p_wait, 1.0 / 3, 1e-12);
  // c = 3, a = 2: (a^3 / 3!) (3 / (3 - 2)) / (1 + 2 + 2 + 4) = 4 / 9.
  EXPECT_NEAR(ApproxWait(3, 20, 0.1, 1, 1).p_wait, 4.0 / 9, 1e-12);
  EXPECT_EQ(ApproxWait(3, 0, 0.1, 1, 1).p_wait, 0);
  EXPECT_EQ(ApproxWait(3, 35, 0.1, 1, 1).p_wait, 1);  // a = 3.5 >= c: unstable
}

TEST(FluidQueueTest, MM1AndMMcAreExact) {
  // M/M/1, lambda 5, service 0.1 s: Wq = rho / (mu - lambda) = 0.1; P(W > x) = rho e^{-5x}.
  const QueueWait w1 = ApproxWait(1, 5, 0.1, 1, 1);
  ASSERT_TRUE(w1.stable);
  EXPECT_NEAR(w1.mean_wait_s, 0.1, 1e-12);
  EXPECT_NEAR(w1.Tail(0.2), 0.5 * std::exp(-1.0), 1e-12);
  EXPECT_NEAR(w1.Tail(-1), 1, 0);
  // M/M/3, lambda 20, service 0.1 s: Wq = C / (c mu - lambda) = (4 / 9) / 10.
  const QueueWait w3 = ApproxWait(3, 20, 0.1, 1, 1);
  EXPECT_NEAR(w3.mean_wait_s, 4.0 / 90, 1e-12);
  EXPECT_NEAR(w3.Tail(0.1), 4.0 / 9 * std::exp(-10 * 0.1), 1e-12);
  // The conditional quantile inverts the tail.
  EXPECT_NEAR(w3.Tail(w3.CondQuantile(0.75)), w3.p_wait * 0.25, 1e-12);
}

TEST(FluidQueueTest, MD1MeanIsPollaczekKhinchine) {
  // M/D/1: Wq = rho s / (2 (1 - rho)) = 0.5 x 0.1 / 1 = 0.05.
  const QueueWait w = ApproxWait(1, 5, 0.1, 1, 0);
  EXPECT_NEAR(w.mean_wait_s, 0.05, 1e-12);
  // Burstier arrivals wait longer, in proportion to (ca2 + cs2) / 2.
  EXPECT_NEAR(ApproxWait(1, 5, 0.1, 4, 0).mean_wait_s, 0.2, 1e-12);
}

TEST(FluidQueueTest, BatchResidualKeepsTheMeanAndBoundsTheTail) {
  const QueueWait plain = ApproxWait(2, 16, 0.09, 1, 0);
  const QueueWait batch = ApproxWait(2, 16, 0.09, 1, 0, 0.13);
  EXPECT_EQ(batch.p_wait, plain.p_wait);
  EXPECT_NEAR(batch.residual_s + 2 * batch.excess_s, 2 * plain.cond_mean_s, 1e-12);
  // E[W] = integral of the tail: the same mean (midpoint rule).
  double integral = 0;
  const double dx = 1e-5;
  for (double x = dx / 2; x < 5; x += dx) integral += batch.Tail(x) * dx;
  EXPECT_NEAR(integral, plain.mean_wait_s, 1e-4 * plain.mean_wait_s);
  // Continuous at the residual's end, lighter than the exponential far out.
  EXPECT_NEAR(batch.Tail(0.13 - 1e-9), batch.Tail(0.13 + 1e-9), 1e-6);
  EXPECT_LT(batch.Tail(0.4), plain.Tail(0.4) / 5);
  // A residual longer than twice the mean shrinks to it: the pure uniform.
  const QueueWait wide = ApproxWait(1, 1, 0.01, 1, 0, 10);
  EXPECT_NEAR(wide.residual_s, 2 * wide.cond_mean_s, 1e-15);
  EXPECT_NEAR(wide.excess_s, 0, 1e-15);
  EXPECT_EQ(wide.Tail(wide.residual_s * 1.01), 0);
}

TEST(FluidQueueTest, OverloadIsUnstable) {
  const QueueWait w = ApproxWait(2, 25, 0.1, 1, 0);
  EXPECT_FALSE(w.stable);
  EXPECT_EQ(w.Tail(10), 1);
}

}  // namespace
}  // namespace sluice::sim
