// WeightedDispatcher: the pick rule, ties, unknown capacities, in-flight caps, and (property)
// capacity-proportional shares, both open (no completions) and in a closed-loop simulation where
// each instance serves its batches one at a time at its capacity.
#include "core/serving/weighted_dispatcher.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

TEST(WeightedDispatcherTest, PicksLeastLoadPerCapacityTiesToLowestId) {
  WeightedDispatcher d;
  EXPECT_FALSE(d.Pick().has_value());
  d.Upsert(7, 10, true);
  d.Upsert(3, 10, true);
  d.Upsert(5, 100, false);  // not ready: never picked
  EXPECT_EQ(*d.Pick(), 3);
  d.OnDispatch(3);
  EXPECT_EQ(*d.Pick(), 7);
  d.OnDispatch(7);
  EXPECT_EQ(*d.Pick(), 3);
  d.Upsert(5, 100, true);
  EXPECT_EQ(*d.Pick(), 5);
  EXPECT_DOUBLE_EQ(d.ReadyCapacity(), 120);
  EXPECT_EQ(d.ready_count(), 3);
  d.OnComplete(3);
  EXPECT_EQ(d.in_flight(3), 0);
  EXPECT_TRUE(d.Remove(5));
  EXPECT_FALSE(d.Remove(5));
}

TEST(WeightedDispatcherTest, UnknownCapacityGetsTheMeanOfKnownOnesOrOne) {
  WeightedDispatcher d;
  d.Upsert(1, 0, true);
  EXPECT_DOUBLE_EQ(d.EffectiveCapacity(1), 1.0);
  d.Upsert(2, 10, true);
  d.Upsert(3, 30, true);
  EXPECT_DOUBLE_EQ(d.EffectiveCapacity(1), 20.0);
  EXPECT_DOUBLE_EQ(d.ReadyCapacity(), 60.0);
}

TEST(WeightedDispatcherTest, MaxInFlightSkipsBusyInstances) {
  WeightedDispatcher d;
  d.Upsert(1, 100, true);
  d.Upsert(2, 1, true);
  d.OnDispatch(1);
  d.OnDispatch(1);
  EXPECT_EQ(*d.Pick(), 1);
  EXPECT_EQ(*d.Pick(2), 2);
  d.OnDispatch(2);
  d.OnDispatch(2);
  EXPECT_FALSE(d.Pick(2).has_value());
  EXPECT_EQ(*d.Pick(0, {1}), 2);
  EXPECT_FALSE(d.Pick(0, {1, 2}).has_value());
}

std::vector<double> RandomCapacities(std::mt19937_64& rng, int n) {
  std::vector<double> caps(n);
  for (double& c : caps)
    c = 5.0 + static_cast<double>(rng() % 1000) / 5.0;
  return caps;
}

TEST(WeightedDispatcherPropertyTest, OpenDispatchSharesMatchCapacityShares) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = 1 + static_cast<int>(rng() % 8);
    const std::vector<double> caps = RandomCapacities(rng, n);
    WeightedDispatcher d;
    double total = 0;
    for (int i = 0; i < n; ++i) {
      d.Upsert(i, caps[i], true);
      total += caps[i];
    }
    const int k = 20000;
    for (int j = 0; j < k; ++j)
      d.OnDispatch(*d.Pick());
    for (int i = 0; i < n; ++i) {
      const double expected = k * caps[i] / total;
      // D'Hondt-style greedy: never below the lower quota, at most n above it.
      ASSERT_GE(d.in_flight(i), std::floor(expected)) << "seed " << seed << " instance " << i;
      ASSERT_LE(d.in_flight(i), expected + n) << "seed " << seed << " instance " << i;
    }
  }
}

TEST(WeightedDispatcherPropertyTest, ClosedLoopThroughputConvergesToCapacityShares) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = 2 + static_cast<int>(rng() % 5);
    const std::vector<double> caps = RandomCapacities(rng, n);
    WeightedDispatcher d;
    double total = 0;
    for (int i = 0; i < n; ++i) {
      d.Upsert(i, caps[i], true);
      total += caps[i];
    }
    // Each instance serves one batch at a time, 1/capacity seconds each; `outstanding` batches
    // circulate (a completion frees a client that sends the next one at once).
    std::vector<double> busy_until(n, -1.0);  // < 0: idle
    std::vector<int64_t> served(n, 0);
    double now = 0;
    auto dispatch = [&] {
      const int64_t i = *d.Pick();
      d.OnDispatch(i);
      if (busy_until[i] < 0)
        busy_until[i] = now + 1.0 / caps[i];
    };
    // Saturated: enough batches that even the slowest instance is worth a batch (a lightly loaded
    // function rightly leaves slow instances idle).
    const double min_cap = *std::min_element(caps.begin(), caps.end());
    const int outstanding = n + static_cast<int>(2 * total / min_cap);
    for (int j = 0; j < outstanding; ++j)
      dispatch();
    const int64_t completions = 40000;
    for (int64_t c = 0; c < completions; ++c) {
      int next = -1;
      for (int i = 0; i < n; ++i) {
        if (busy_until[i] >= 0 && (next < 0 || busy_until[i] < busy_until[next]))
          next = i;
      }
      now = busy_until[next];
      d.OnComplete(next);
      ++served[next];
      busy_until[next] = d.in_flight(next) > 0 ? now + 1.0 / caps[next] : -1.0;
      dispatch();
    }
    for (int i = 0; i < n; ++i) {
      const double share = static_cast<double>(served[i]) / completions;
      ASSERT_NEAR(share, caps[i] / total, 0.03) << "seed " << seed << " instance " << i;
    }
  }
}

}  // namespace
}  // namespace sluice::core
