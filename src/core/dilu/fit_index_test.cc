// FitIndex against brute force over seeded random upsert/erase sequences (keys clustered so
// buckets fill up and ties happen), plus the bitmap IdSet.
#include "core/dilu/fit_index.h"

#include <algorithm>
#include <random>
#include <set>

#include "gtest/gtest.h"

#include "core/dilu/id_set.h"

namespace sluice::core {
namespace {

TEST(FitIndexTest, MatchesBruteForceUnderRandomUpdates) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    auto uni = [&](double a, double b) {
      return std::uniform_real_distribution<double>(a, b)(rng);
    };
    const int n = std::uniform_int_distribution<int>(1, 300)(rng);
    const int buckets = std::uniform_int_distribution<int>(1, 64)(rng);
    FitIndex index(n, 0.0, 1.0, buckets);
    std::vector<bool> in(n, false);
    std::vector<double> key(n);
    std::vector<Room> room(n);
    for (int step = 0; step < 2000; ++step) {
      const int g = std::uniform_int_distribution<int>(0, n - 1)(rng);
      if (uni(0, 1) < 0.25) {
        index.Erase(g);
        in[g] = false;
      } else {
        key[g] = std::round(uni(-0.1, 1.1) * 20) / 20;  // clustered, some outside the range
        room[g] = {uni(-0.2, 1), uni(-0.2, 1.5), static_cast<int64_t>(uni(0, 100))};
        index.Upsert(g, key[g], room[g]);
        in[g] = true;
      }
      const Room need{uni(0, 0.8), uni(0, 1.2), static_cast<int64_t>(uni(0, 90))};
      int want = -1;
      std::set<int> fitting;
      for (int i = 0; i < n; ++i) {
        if (!in[i] || !Fits(room[i], need))
          continue;
        fitting.insert(i);
        if (want < 0 || key[i] < key[want])
          want = i;  // ascending i: ties keep the lower id
      }
      ASSERT_EQ(index.FindFirst(need), want) << "seed=" << seed << " step=" << step;
      std::set<int> visited;
      index.ForEachFit(need, [&](int x) { return visited.insert(x).second; });
      ASSERT_EQ(visited, fitting) << "seed=" << seed << " step=" << step;
      ASSERT_EQ(index.size(), std::count(in.begin(), in.end(), true)) << "seed=" << seed;
    }
  }
}

TEST(FitIndexTest, ForEachFitStopsWhenAsked) {
  FitIndex index(10, 0, 1, 4);
  for (int g = 0; g < 10; ++g)
    index.Upsert(g, g / 10.0, {1, 1, 1});
  int calls = 0;
  index.ForEachFit({0, 0, 0}, [&](int) { return ++calls < 3; });
  EXPECT_EQ(calls, 3);
}

TEST(IdSetTest, InsertEraseFirstAcrossWords) {
  IdSet s(10000);
  EXPECT_EQ(s.First(), -1);
  for (int id : {9999, 4100, 64, 63})
    s.Insert(id);
  s.Insert(64);  // twice: no effect
  EXPECT_EQ(s.size(), 4);
  EXPECT_EQ(s.First(), 63);
  s.Erase(63);
  s.Erase(63);
  EXPECT_EQ(s.First(), 64);
  s.Erase(64);
  EXPECT_EQ(s.First(), 4100);
  s.Erase(4100);
  EXPECT_EQ(s.First(), 9999);
  EXPECT_TRUE(s.contains(9999));
  s.Erase(9999);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.First(), -1);
}

}  // namespace
}  // namespace sluice::core
