// Tests of the scale-out arbitration: fixed cases and a seeded property against a fake cluster
// with a fixed number of free slots.
#include "core/serving/scale_out.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::ElementsAre;

// Runs the grant loop with `slots` free places; returns the order of the grants.
std::vector<int> Grant(std::vector<ScaleOutNeed> needs, int slots) {
  ScaleOutOrder order(std::move(needs));
  std::vector<int> grants;
  for (int j = order.Next(); j >= 0; j = order.Next()) {
    if (slots > 0) {
      --slots;
      order.Granted(j);
      grants.push_back(j);
    } else {
      order.Refused(j);
    }
  }
  return grants;
}

TEST(ScaleOutOrderTest, MostWaitingPerInstanceFirstAndTheCountGrowsWithEachGrant) {
  // Stage 2 has 12 waiting on 2 (6 each), stage 0 has 4 on 1: 2, then 2 (12/3 = 4 ties 4/1 and
  // stage 0 has fewer grants), then 0, then 2 (12/4 = 3 beats 4/2 = 2).
  EXPECT_THAT(Grant({{4, 1, 3}, {0, 1, 0}, {12, 2, 3}}, 4), ElementsAre(2, 0, 2, 2));
}

TEST(ScaleOutOrderTest, WithRoomForAllEveryoneGetsWhatItAskedFor) {
  EXPECT_THAT(Grant({{0, 0, 2}, {0, 3, 1}}, 10), ElementsAre(0, 1, 0));  // ties: fewest granted
}

TEST(ScaleOutOrderTest, WithoutRoomTheCongestedStageWinsWhateverItsIndex) {
  EXPECT_THAT(Grant({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {9, 1, 1}}, 1), ElementsAre(3));
}

TEST(ScaleOutOrderTest, NothingWantedNothingGranted) {
  EXPECT_EQ(ScaleOutOrder({}).Next(), -1);
  EXPECT_EQ(ScaleOutOrder({{5, 1, 0}, {5, 1, -2}}).Next(), -1);
}

TEST(ScaleOutOrderTest, GrantsNeverExceedWantOrSlotsForRandomCases) {
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    std::vector<ScaleOutNeed> needs;
    const int n = static_cast<int>(rng() % 9);
    int total_want = 0;
    for (int i = 0; i < n; ++i) {
      needs.push_back({static_cast<double>(rng() % 20), static_cast<int>(rng() % 4),
                       static_cast<int>(rng() % 5) - 1});
      total_want += std::max(0, needs.back().want);
    }
    const int slots = static_cast<int>(rng() % 12);
    const std::vector<int> grants = Grant(needs, slots);
    EXPECT_EQ(static_cast<int>(grants.size()), std::min(slots, total_want)) << seed;
    for (int i = 0; i < n; ++i) {
      EXPECT_LE(std::count(grants.begin(), grants.end(), i),
                std::max(0, needs[static_cast<size_t>(i)].want))
          << seed;
    }
  }
}

}  // namespace
}  // namespace sluice::core
