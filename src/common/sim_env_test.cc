#include "common/sim_env.h"

#include <algorithm>
#include <functional>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::common {
namespace {

TEST(SimEnvTest, JumpsToNextEventAndBreaksTiesByInsertionOrder) {
  SimEnv env;
  std::vector<int> order;
  env.RunAt(absl::UnixEpoch() + absl::Seconds(5), [&] { order.push_back(3); });
  env.RunAt(absl::UnixEpoch() + absl::Seconds(1), [&] { order.push_back(1); });
  env.RunAt(absl::UnixEpoch() + absl::Seconds(1), [&] { order.push_back(2); });
  env.Run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(env.Now(), absl::UnixEpoch() + absl::Seconds(5));
  EXPECT_EQ(env.events_run(), 3u);
}

TEST(SimEnvTest, CancelPreventsRunAndStaleIdsAreRejected) {
  SimEnv env;
  int runs = 0;
  auto id = env.RunAfter(absl::Seconds(1), [&] { ++runs; });
  EXPECT_TRUE(env.Cancel(id));
  EXPECT_FALSE(env.Cancel(id));
  EXPECT_EQ(env.pending(), 0u);
  auto id2 = env.RunAfter(absl::Seconds(1), [&] { ++runs; });  // reuses the slot
  EXPECT_FALSE(env.Cancel(id));                                // stale id
  env.Run();
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(env.Cancel(id2));
}

TEST(SimEnvTest, CallbacksCanScheduleMoreWork) {
  SimEnv env;
  int count = 0;
  std::function<void()> tick = [&] {
    if (++count < 10) {
      env.RunAfter(absl::Milliseconds(5), tick);
    }
  };
  env.Post(tick);
  env.Run();
  EXPECT_EQ(count, 10);
  EXPECT_EQ(env.Now(), absl::UnixEpoch() + absl::Milliseconds(45));
}

TEST(ManualEnvTest, AdvanceFiresOnlyDueTimers) {
  ManualEnv env;
  int a = 0, b = 0;
  env.RunAfter(absl::Milliseconds(10), [&] { ++a; });
  env.RunAfter(absl::Milliseconds(30), [&] { ++b; });
  env.Advance(absl::Milliseconds(20));
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(env.Now(), absl::UnixEpoch() + absl::Milliseconds(20));
  env.Advance(absl::Milliseconds(10));
  EXPECT_EQ(b, 1);
}

TEST(SimEnvTest, PastTimesRunAtNow) {
  SimEnv env(absl::UnixEpoch() + absl::Seconds(10));
  absl::Time seen;
  env.RunAt(absl::UnixEpoch(), [&] { seen = env.Now(); });
  env.Run();
  EXPECT_EQ(seen, absl::UnixEpoch() + absl::Seconds(10));
}

// The 4-ary heap must pop in exactly (time, insertion) order, with cancellations and callbacks
// that schedule more work in the mix: checked against a sorted reference on many ties.
TEST(SimEnvTest, PopOrderMatchesSortedReferenceUnderTiesAndCancels) {
  SimEnv env;
  std::mt19937 rng(7);
  std::vector<std::tuple<int64_t, int, int>> expected;  // (time ms, seq, tag)
  std::vector<int> order;
  std::vector<Env::TimerId> ids;
  int seq = 0;
  for (int tag = 0; tag < 5000; ++tag) {
    const int64_t ms = static_cast<int64_t>(rng() % 200);  // many equal times
    ids.push_back(env.RunAt(absl::UnixEpoch() + absl::Milliseconds(ms),
                            [&order, tag] { order.push_back(tag); }));
    expected.emplace_back(ms, seq++, tag);
  }
  std::vector<bool> cancelled(expected.size(), false);
  for (int k = 0; k < 1000; ++k) {
    const size_t i = rng() % ids.size();
    if (!cancelled[i]) {
      EXPECT_TRUE(env.Cancel(ids[i]));
      cancelled[i] = true;
    }
  }
  std::vector<int> want;
  std::sort(expected.begin(), expected.end());
  for (const auto& [ms, s, tag] : expected) {
    if (!cancelled[tag])
      want.push_back(tag);
  }
  env.Run();
  EXPECT_EQ(order, want);
}

// Periodic timers (the fixed-delay lanes' case: several share a delay) mixed with one-off timers
// at random delays, some equal to a period, and cancellations: every run callback's (time,
// scheduling order) must exceed the previous one's, and every timer not cancelled must run.
TEST(SimEnvTest, FixedDelayTimersAndOneOffsRunInTimeThenSchedulingOrder) {
  SimEnv env;
  std::mt19937 rng(11);
  const absl::Time end = absl::UnixEpoch() + absl::Seconds(3);
  std::vector<std::pair<absl::Time, int>> ran;  // (scheduled time, scheduling order)
  std::vector<Env::TimerId> one_offs;
  int scheduled = 0, cancelled = 0;
  std::function<void(absl::Duration)> tick;
  auto schedule = [&](absl::Duration d, std::function<void()> then) {
    const absl::Time at = env.Now() + d;
    const int order = scheduled++;
    return env.RunAt(at, [&ran, at, order, then] {
      ran.emplace_back(at, order);
      then();
    });
  };
  tick = [&](absl::Duration period) {
    if (env.Now() + period > end)
      return;
    schedule(period, [&tick, period] { tick(period); });
    if (rng() % 4 == 0) {  // a one-off, sometimes exactly a period ahead
      const absl::Duration d =
          rng() % 3 == 0 ? absl::Milliseconds(5) : absl::Microseconds(rng() % 20000);
      one_offs.push_back(schedule(d, [] {}));
    }
    if (rng() % 16 == 0 && !one_offs.empty()) {
      const size_t k = rng() % one_offs.size();
      cancelled += env.Cancel(one_offs[k]) ? 1 : 0;
    }
  };
  for (int ms : {5, 5, 1000, 7, 5, 3})
    tick(absl::Milliseconds(ms));
  env.Run();
  EXPECT_EQ(env.pending(), 0u);
  EXPECT_EQ(static_cast<int>(ran.size()), scheduled - cancelled);
  EXPECT_GT(cancelled, 0);
  for (size_t i = 1; i < ran.size(); ++i)
    ASSERT_LT(ran[i - 1], ran[i]) << "event " << i;
}

}  // namespace
}  // namespace sluice::common
