// Unit and property tests for RebalanceUnderBudget.
#include "core/quart/budget_rebalancer.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

RebalanceStage Stage(int held, int delta, int asked, int need, int min_replicas = 1,
                     bool may_give = true) {
  return {held, delta, asked, min_replicas, need, may_give};
}

TEST(RebalanceUnderBudget, MovesSurplusToTheCutStage) {
  // Stage 0 holds 6 and needs 3; stage 2 asked for 3 more and FitTotal cut them all.
  const std::vector<int> d =
      RebalanceUnderBudget({Stage(6, 0, 0, 3), Stage(4, 0, 0, 4), Stage(3, 0, 3, 6)});
  EXPECT_EQ(d, (std::vector<int>{-3, 0, 3}));
}

TEST(RebalanceUnderBudget, TakesFromTheMostSurplusPerNeedFirst) {
  // 8 / 2 before 6 / 3; the cut is 2 replicas.
  const std::vector<int> d =
      RebalanceUnderBudget({Stage(6, 0, 0, 3), Stage(8, 0, 0, 2), Stage(2, 0, 2, 4)});
  EXPECT_EQ(d, (std::vector<int>{0, -2, 2}));
}

TEST(RebalanceUnderBudget, GivesToTheShortestPerNeedFirst) {
  // One spare replica; stage 2 holds 2 for a need of 6, stage 1 4 for 6.
  const std::vector<int> d =
      RebalanceUnderBudget({Stage(5, 0, 0, 4), Stage(4, 0, 2, 6), Stage(2, 0, 2, 6)});
  EXPECT_EQ(d, (std::vector<int>{-1, 0, 1}));
}

TEST(RebalanceUnderBudget, NothingMovesWhenNothingIsShortOrNothingIsSurplus) {
  // Nobody cut.
  EXPECT_EQ(RebalanceUnderBudget({Stage(6, 0, 0, 3), Stage(3, 1, 1, 4)}),
            (std::vector<int>{0, 1}));
  // Cut, but every other stage holds only its need.
  EXPECT_EQ(RebalanceUnderBudget({Stage(3, 0, 0, 3), Stage(3, 0, 2, 6)}),
            (std::vector<int>{0, 0}));
  // Cut, surplus, but the surplus stage may not give (over target or scaled up lately).
  EXPECT_EQ(RebalanceUnderBudget({Stage(6, 0, 0, 3, 1, false), Stage(3, 0, 2, 6)}),
            (std::vector<int>{0, 0}));
  // A stage scaling up this decision is not a donor either.
  EXPECT_EQ(RebalanceUnderBudget({Stage(6, 1, 1, 3), Stage(3, 0, 2, 6)}),
            (std::vector<int>{1, 0}));
}

TEST(RebalanceUnderBudget, NeverBelowMinReplicas) {
  // Need 1 but min 5: only 6 - 5 = 1 replica may go.
  EXPECT_EQ(RebalanceUnderBudget({Stage(6, 0, 0, 1, 5), Stage(1, 0, 4, 6)}),
            (std::vector<int>{-1, 1}));
  // A donor the smoother already drains by one gives down to its need, no further.
  EXPECT_EQ(RebalanceUnderBudget({Stage(6, -1, -1, 3), Stage(1, 0, 4, 6)}),
            (std::vector<int>{-3, 2}));
}

TEST(RebalanceUnderBudgetProperty, KeepsTheTotalAndTheBounds) {
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    const int n = 1 + static_cast<int>(rng() % 8);
    std::vector<RebalanceStage> in(n);
    int before = 0;
    for (RebalanceStage& s : in) {
      s.held = static_cast<int>(rng() % 12);
      s.min_replicas = static_cast<int>(rng() % 3);
      s.asked = static_cast<int>(rng() % 7) - 2;
      s.delta = s.asked - static_cast<int>(rng() % 4);
      if (s.held + s.delta < s.min_replicas)
        s.delta = s.asked = s.min_replicas - s.held;
      s.need = static_cast<int>(rng() % 10);
      s.may_give = rng() % 4 != 0;
      before += s.held + s.delta;
    }
    const std::vector<int> out = RebalanceUnderBudget(in);
    ASSERT_EQ(out.size(), in.size());
    int after = 0;
    for (int i = 0; i < n; ++i) {
      const RebalanceStage& s = in[i];
      after += s.held + out[i];
      ASSERT_GE(s.held + out[i], s.min_replicas) << "seed " << seed << " stage " << i;
      ASSERT_LE(out[i], std::max(s.delta, s.asked)) << "seed " << seed << " stage " << i;
      if (out[i] < s.delta) {  // a donor: kept its need, may give, was not short
        ASSERT_TRUE(s.may_give) << "seed " << seed;
        ASSERT_GE(s.held + out[i], std::max(s.min_replicas, s.need)) << "seed " << seed;
        ASSERT_EQ(s.delta, s.asked) << "seed " << seed;
      }
    }
    ASSERT_EQ(after, before) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::core
