// RestartBackoff: 0.5 s doubling to 30 s, reset by a healthy minute, crash loop after 5 quick
// exits in a row (and not before), over seeded random run lengths as well.
#include "runtime/cli/restart_backoff.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(RestartBackoffTest, DoublesToTheCapAndFlagsACrashLoop) {
  RestartBackoff b;
  absl::Time t = absl::UnixEpoch();
  const absl::Duration want[] = {absl::Milliseconds(500), absl::Seconds(1), absl::Seconds(2),
                                 absl::Seconds(4),        absl::Seconds(8), absl::Seconds(16),
                                 absl::Seconds(30),       absl::Seconds(30)};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(b.OnExit(t, t + absl::Seconds(1)), want[i]) << i;
    EXPECT_EQ(b.crash_looping(), i + 1 >= 5) << i;
    t += absl::Seconds(1) + want[i];
  }
}

TEST(RestartBackoffTest, AHealthyMinuteResetsDelayAndCount) {
  RestartBackoff b;
  const absl::Time t = absl::UnixEpoch();
  for (int i = 0; i < 6; ++i)
    b.OnExit(t, t + absl::Seconds(2));
  ASSERT_TRUE(b.crash_looping());
  EXPECT_EQ(b.OnExit(t, t + absl::Seconds(60)), absl::Milliseconds(500));
  EXPECT_FALSE(b.crash_looping());
  EXPECT_EQ(b.quick_exits(), 1);
  EXPECT_EQ(b.OnExit(t, t + absl::Seconds(59)), absl::Seconds(1));  // 59 s is not healthy
}

// Property: every delay is within [min, max], never shrinks without a healthy run, and a
// crash loop is flagged exactly when 5 or more quick exits follow the last healthy run.
TEST(RestartBackoffTest, PropertyBoundedMonotoneUntilHealthy) {
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> run_s(0, 90);
    RestartBackoff b;
    absl::Duration last = absl::ZeroDuration();
    int quick = 0;
    absl::Time t = absl::UnixEpoch();
    for (int i = 0; i < 40; ++i) {
      const absl::Duration run = absl::Seconds(run_s(rng));
      const bool healthy = run >= absl::Seconds(60);
      const absl::Duration d = b.OnExit(t, t + run);
      quick = healthy ? 1 : quick + 1;
      ASSERT_GE(d, absl::Milliseconds(500)) << "seed " << seed;
      ASSERT_LE(d, absl::Seconds(30)) << "seed " << seed;
      if (!healthy) {
        ASSERT_GE(d, last) << "seed " << seed;
      }
      ASSERT_EQ(b.crash_looping(), quick >= 5) << "seed " << seed;
      last = d;
      t += run + d;
    }
  }
}

}  // namespace
}  // namespace sluice::runtime
