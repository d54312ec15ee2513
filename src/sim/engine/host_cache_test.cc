// HostCache: LRU order, eviction once past 85 % of the capacity, oversized entries; and in the
// engine, a model evicted from a node's host cache cold-starts from storage again.
#include "sim/engine/host_cache.h"

#include <vector>

#include "gtest/gtest.h"

#include "sim/engine/engine_test_util.h"
#include "sim/engine/testing/fake_pipeline.h"

namespace sluice::sim {
namespace {

using common::Bytes;

const char kKeys[3] = {};  // distinct addresses as keys
const void* const kA = &kKeys[0];
const void* const kB = &kKeys[1];
const void* const kC = &kKeys[2];

TEST(HostCacheTest, EvictsLeastRecentlyUsedPastThreshold) {
  HostCache c(Bytes(100));  // keeps up to 85 bytes
  EXPECT_TRUE(c.Insert(kA, Bytes(40)).empty());
  EXPECT_TRUE(c.Insert(kB, Bytes(40)).empty());
  EXPECT_EQ(c.used_bytes(), 80);
  EXPECT_TRUE(c.Touch(kA));  // B is now the least recently used
  const std::vector<HostCache::Key> ev = c.Insert(kC, Bytes(10));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], kB);
  EXPECT_TRUE(c.Contains(kA));
  EXPECT_FALSE(c.Contains(kB));
  EXPECT_TRUE(c.Contains(kC));
  EXPECT_EQ(c.used_bytes(), 50);
}

TEST(HostCacheTest, ExactlyAtThresholdStaysAndReinsertTouches) {
  HostCache c(Bytes(100));
  EXPECT_TRUE(c.Insert(kA, Bytes(45)).empty());
  EXPECT_TRUE(c.Insert(kB, Bytes(40)).empty());  // 85 = 85 %: kept
  EXPECT_EQ(c.size(), 2u);
  EXPECT_TRUE(c.Insert(kA, Bytes(45)).empty());  // present: touched, size unchanged
  EXPECT_EQ(c.used_bytes(), 85);
  const std::vector<HostCache::Key> ev = c.Insert(kC, Bytes(1));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], kB);
}

TEST(HostCacheTest, EntryLargerThanThresholdIsNotKept) {
  HostCache c(Bytes(100));
  EXPECT_TRUE(c.Insert(kA, Bytes(10)).empty());
  const std::vector<HostCache::Key> ev = c.Insert(kB, Bytes(90));
  EXPECT_EQ(ev.size(), 2u);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.used_bytes(), 0);
  EXPECT_FALSE(c.Touch(kB));
}

// One node of 3 GPUs; "a" warm at t = 0, "b" starts at 1 s, a second "a" at 5 s. With 2 GiB of
// host memory (1.7 GiB usable) b's 1 GiB evicts a's, so a cold-starts from storage again.
std::string RunEviction(Bytes host_memory) {
  auto perf = std::make_unique<core::PerfModel>();
  testing::AddLinearModel(*perf, "a", absl::Milliseconds(10));
  testing::AddLinearModel(*perf, "b", absl::Milliseconds(10));
  SimConfig c = testing::SmallConfig(1, 3);
  c.cluster.nodes[0].host_memory = host_memory;
  FunctionConfig a = testing::FakeFunction("a", core::SmQuota{1, 1}, testing::Poisson(1));
  a.model = "a";
  FunctionConfig b = testing::FakeFunction("b", core::SmQuota{1, 1}, testing::Poisson(1));
  b.model = "b";
  b.initial_instances = b.min_instances = 0;
  c.functions = {a, b};
  testing::FakePolicyOptions o;
  o.scripts = {{{absl::UnixEpoch() + absl::Seconds(5), 2}},
               {{absl::UnixEpoch() + absl::Seconds(1), 1}}};
  auto out = testing::RunFake(c, std::move(o), *perf);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->log : "";
}

TEST(HostCacheEngineTest, EvictedModelColdStartsFromStorage) {
  const std::string small = RunEviction(Bytes::GiB(2));
  EXPECT_NE(small.find("b cache_evict node=0 model=a"), std::string::npos) << small;
  EXPECT_NE(small.find("a cold_start inst=2 load_s=3.000000 source=storage"), std::string::npos)
      << small;
  const std::string big = RunEviction(Bytes::GiB(256));
  EXPECT_EQ(big.find("cache_evict"), std::string::npos);
  EXPECT_NE(big.find("a cold_start inst=2 load_s=2.062500 source=host_cache"), std::string::npos)
      << big;
}

}  // namespace
}  // namespace sluice::sim
