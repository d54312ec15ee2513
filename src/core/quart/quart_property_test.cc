// Property tests over seeded random cases: Erlang C in [0, 1] and monotone, the PID output
// bounded. (Placement and scaler properties are added beside their types.)
#include <random>

#include "gtest/gtest.h"

#include "core/quart/mmc_model.h"
#include "core/quart/pid_corrector.h"

namespace sluice::core {
namespace {

TEST(QuartProperty, ErlangCInUnitIntervalAndMonotone) {
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    const int c = std::uniform_int_distribution<int>(1, 400)(rng);
    const double a = std::uniform_real_distribution<double>(0.0, 1.2 * c)(rng);
    const double p = ErlangC(c, a);
    ASSERT_GE(p, 0.0) << "seed " << seed;
    ASSERT_LE(p, 1.0) << "seed " << seed;
    ASSERT_LE(ErlangC(c + 1, a), p + 1e-12) << "seed " << seed << ": more servers, more waiting";
    ASSERT_GE(ErlangC(c, a * 1.01), p - 1e-12) << "seed " << seed << ": more load, less waiting";
    const MmcResult m = MmcQueue(a, 1.0, c);
    if (m.stable) {
      ASSERT_LE(MmcQueue(a, 1.0, c + 1).mean_wait, m.mean_wait) << "seed " << seed;
    }
  }
}

TEST(QuartProperty, PidOutputBoundedAndIntegralClamped) {
  for (uint32_t seed = 1; seed <= 500; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    PidConfig c;
    c.kp = 10 * u(rng);
    c.ki = 5 * u(rng);
    c.kd = 5 * u(rng);
    c.max_step = 0.5 + 10 * u(rng);
    c.integral_limit = 20 * u(rng);
    c.two_sided_integral = u(rng) < 0.5;
    auto pid = PidCorrector::Create(c);
    ASSERT_TRUE(pid.ok());
    for (int step = 0; step < 200; ++step) {
      const double e = u(rng) < 0.05 ? INFINITY : 20 * u(rng) - 10;
      const absl::Duration dt = absl::Milliseconds(1 + 2000 * u(rng));
      const double out = pid->Update(e, dt, u(rng) < 0.2);
      ASSERT_LE(std::abs(out), c.max_step) << "seed " << seed;
      ASSERT_LE(std::abs(pid->integral()), c.integral_limit + 1e-12) << "seed " << seed;
      if (!c.two_sided_integral) {
        ASSERT_GE(pid->integral(), 0.0) << "seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::core
