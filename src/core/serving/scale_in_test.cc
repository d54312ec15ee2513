// Tests of the scale-in order: fixed cases and a seeded property.
#include "core/serving/scale_in.h"

#include <algorithm>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::ElementsAre;

TEST(ScaleInTest, StartingFirstThenLeastLoadedThenNewest) {
  EXPECT_THAT(PickScaleIn({{1, true, 0}, {2, true, 3}, {3, false, 0}, {4, true, 0}}, 3),
              ElementsAre(3, 4, 1));
  EXPECT_THAT(PickScaleIn({{1, true, 0}}, 5), ElementsAre(1));
  EXPECT_THAT(PickScaleIn({{1, true, 0}, {2, true, 0}}, 0), ElementsAre());
}

TEST(ScaleInTest, PickedVictimsAreDistinctMembersForRandomCases) {
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    std::vector<ScaleInCandidate> c;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      c.push_back({i + 1, rng() % 2 == 0, static_cast<int64_t>(rng() % 4)});
    }
    const int k = static_cast<int>(rng() % 10);
    std::vector<int64_t> v = PickScaleIn(c, k);
    ASSERT_EQ(static_cast<int>(v.size()), std::min(k, n)) << "seed " << seed;
    std::sort(v.begin(), v.end());
    EXPECT_EQ(std::unique(v.begin(), v.end()), v.end()) << "seed " << seed;
    for (int64_t id : v) EXPECT_TRUE(id >= 1 && id <= n) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::core
