// HandleMap: model-checked against std::unordered_map over seeded random operation sequences,
// growth and tombstone reuse, and lock-free readers racing writers.
#include "intercept/handle_map.h"

#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::intercept {
namespace {

TEST(HandleMapTest, InsertFindEraseOverwrite) {
  HandleMap map(16);
  int64_t v = 0;
  EXPECT_FALSE(map.Find(0x1000, &v));
  EXPECT_TRUE(map.Insert(0x1000, 7));
  EXPECT_TRUE(map.Find(0x1000, &v));
  EXPECT_EQ(v, 7);
  EXPECT_TRUE(map.Insert(0x1000, 9));  // overwrite keeps one entry
  EXPECT_EQ(map.size(), 1u);
  EXPECT_TRUE(map.Erase(0x1000, &v));
  EXPECT_EQ(v, 9);
  EXPECT_FALSE(map.Erase(0x1000, &v));
  EXPECT_FALSE(map.Find(0x1000, nullptr));
  EXPECT_EQ(map.size(), 0u);
}

TEST(HandleMapTest, RejectsReservedKeys) {
  HandleMap map;
  EXPECT_FALSE(map.Insert(0, 1));
  EXPECT_FALSE(map.Insert(~uint64_t{0}, 1));
  EXPECT_FALSE(map.Find(0, nullptr));
}

TEST(HandleMapTest, MatchesModelOverRandomOperations) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    HandleMap map(16);
    std::unordered_map<uint64_t, int64_t> model;
    // Keys drawn from a small range so inserts, overwrites and erases collide often; aligned
    // like device pointers to exercise the hash mixing.
    std::uniform_int_distribution<uint64_t> key_dist(1, 3000);
    for (int step = 0; step < 20000; ++step) {
      const uint64_t key = key_dist(rng) << 12;
      const int op = static_cast<int>(rng() % 3);
      int64_t got = 0;
      if (op == 0) {
        const int64_t value = static_cast<int64_t>(rng() >> 1);
        ASSERT_TRUE(map.Insert(key, value));
        model[key] = value;
      } else if (op == 1) {
        const bool present = model.erase(key) > 0;
        ASSERT_EQ(map.Erase(key, &got), present) << "step " << step;
      } else {
        auto it = model.find(key);
        ASSERT_EQ(map.Find(key, &got), it != model.end()) << "step " << step;
        if (it != model.end()) {
          ASSERT_EQ(got, it->second);
        }
      }
      ASSERT_EQ(map.size(), model.size());
    }
    for (const auto& [k, v] : model) {
      int64_t got = 0;
      ASSERT_TRUE(map.Find(k, &got));
      EXPECT_EQ(got, v);
    }
  }
}

TEST(HandleMapTest, GrowsAndKeepsEntries) {
  HandleMap map(16);
  for (uint64_t i = 1; i <= 10000; ++i)
    ASSERT_TRUE(map.Insert(i * 256, static_cast<int64_t>(i)));
  EXPECT_GE(map.capacity(), 20000u);
  for (uint64_t i = 1; i <= 10000; ++i) {
    int64_t v = 0;
    ASSERT_TRUE(map.Find(i * 256, &v));
    EXPECT_EQ(v, static_cast<int64_t>(i));
  }
}

TEST(HandleMapTest, ChurnDoesNotGrowWithoutBound) {
  HandleMap map(64);
  for (uint64_t i = 1; i <= 200000; ++i) {
    ASSERT_TRUE(map.Insert(i, 1));
    ASSERT_TRUE(map.Erase(i, nullptr));
  }
  EXPECT_LE(map.capacity(), 64u);  // tombstones were recycled by same-size rebuilds
}

TEST(HandleMapTest, ReadersSeeStableKeysWhileWritersChurn) {
  HandleMap map(16);
  constexpr uint64_t kStable = 512;
  for (uint64_t i = 1; i <= kStable; ++i)
    ASSERT_TRUE(map.Insert(i, static_cast<int64_t>(i * 3)));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> misses{0};
  std::thread reader([&] {
    while (!stop.load()) {
      for (uint64_t i = 1; i <= kStable; ++i) {
        int64_t v = 0;
        if (!map.Find(i, &v) || v != static_cast<int64_t>(i * 3))
          misses.fetch_add(1);
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&map, w] {
      for (uint64_t i = 0; i < 50000; ++i) {
        const uint64_t key = (uint64_t{1} << 40) + i * 2 + static_cast<uint64_t>(w);
        ASSERT_TRUE(map.Insert(key, 1));
        if (i % 3 != 0) {
          ASSERT_TRUE(map.Erase(key, nullptr));
        }
      }
    });
  }
  for (auto& t : writers)
    t.join();
  stop.store(true);
  reader.join();
  EXPECT_EQ(misses.load(), 0);
  EXPECT_EQ(map.size(), kStable + 2 * 16667);
}

}  // namespace
}  // namespace sluice::intercept
