// Tests of PickMutationVictims: the keep-one rule, the order, and a property over random pools.
#include "core/llm/mutation.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"

namespace sluice::core::llm {
namespace {

TEST(PickMutationVictimsTest, LeavesOnePrefillInstance) {
  const std::vector<MutationCandidate> c = {{1, 0, 0}, {2, 0, 0}, {3, 0, 0}};
  EXPECT_EQ(PickMutationVictims(c, 3, 5).size(), 2u);
  EXPECT_TRUE(PickMutationVictims(c, 1, 1).empty());
  EXPECT_TRUE(PickMutationVictims(c, 3, 0).empty());
  // Paired or busy-switching instances are not candidates but still count in the pool.
  EXPECT_EQ(PickMutationVictims(std::span(c).first(1), 3, 2), std::vector<int64_t>{1});
}

TEST(PickMutationVictimsTest, FewestQueuedTokensThenRequestsThenOldest) {
  const std::vector<MutationCandidate> c = {
      {1, 500, 0}, {2, 100, 3}, {3, 100, 1}, {4, 100, 1}, {5, 0, 9}};
  EXPECT_EQ(PickMutationVictims(c, 10, 4), (std::vector<int64_t>{5, 3, 4, 2}));
}

TEST(PickMutationVictimsTest, PropertyNoVictimIsCostlierThanAKeptCandidate) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<MutationCandidate> c(rng() % 8);
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = {static_cast<int64_t>(i), static_cast<int64_t>(rng() % 4) * 100,
              static_cast<int>(rng() % 3)};
    const int pool = static_cast<int>(c.size() + rng() % 3);
    const int n = static_cast<int>(rng() % 6);
    const std::vector<int64_t> v = PickMutationVictims(c, pool, n);
    ASSERT_LE(static_cast<int>(v.size()), std::max(0, std::min(n, pool - 1)));
    for (const MutationCandidate& kept : c) {
      if (std::find(v.begin(), v.end(), kept.id) != v.end())
        continue;
      for (const int64_t id : v) {
        const MutationCandidate& taken = c[id];
        EXPECT_LE(std::tuple(taken.queued_prompt_tokens, taken.requests, taken.id),
                  std::tuple(kept.queued_prompt_tokens, kept.requests, kept.id));
      }
    }
  }
}

}  // namespace
}  // namespace sluice::core::llm
