#include "core/blitz/parameter_pool.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core::blitz {
namespace {

using common::Bytes;
const absl::Time kT0 = absl::FromUnixSeconds(100);

PoolConfig Config(HostCachePolicy policy, int nodes, double cache_gib) {
  PoolConfig c;
  c.policy = policy;
  c.nodes = nodes;
  c.host_cache_per_node = Bytes::GiB(cache_gib);
  return c;
}

Endpoint Gpu(int node, int gpu) {
  Endpoint e;
  e.node = node;
  e.gpus = {gpu};
  return e;
}

TEST(ParameterPoolTest, OneCopyDistributesEvenlyAndFailsWhenFull) {
  ParameterPool pool(Config(HostCachePolicy::kOneCopy, 4, 30));
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(pool.AddModel("m" + std::to_string(i), Bytes::GiB(13), kT0).ok());
  }
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(pool.HostCacheUsed(n), Bytes::GiB(26)) << n;
  }
  EXPECT_EQ(pool.TotalHostCacheUsed(), Bytes::GiB(104));
  EXPECT_EQ(pool.HostCopies("m3"), 1);
  absl::Status full = pool.AddModel("big", Bytes::GiB(13), kT0);
  EXPECT_EQ(full.code(), absl::StatusCode::kFailedPrecondition) << full;
  EXPECT_EQ(pool.AddModel("m0", Bytes::GiB(1), kT0).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(pool.AddModel("zero", Bytes(0), kT0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pool.AddModel("", Bytes(1), kT0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(pool.InvariantHolds());
}

TEST(ParameterPoolTest, SourcesListGpuInstancesFirstThenHosts) {
  ParameterPool pool(Config(HostCachePolicy::kOneCopy, 2, 100));
  ASSERT_TRUE(pool.AddModel("llama2-7b", Bytes::GiB(13), kT0).ok());
  pool.AddGpuCopy("llama2-7b", 9, Gpu(1, 3));
  pool.AddGpuCopy("llama2-7b", 4, Gpu(0, 2));
  pool.AddGpuCopy("unknown", 1, Gpu(0, 0));  // ignored
  std::vector<Endpoint> src = pool.Sources("llama2-7b");
  ASSERT_EQ(src.size(), 3u);
  EXPECT_EQ(src[0].node, 0);  // instance 4 before instance 9
  EXPECT_EQ(src[1].node, 1);
  EXPECT_EQ(src[2].kind, Endpoint::Kind::kHost);
  EXPECT_EQ(pool.GpuCopies("llama2-7b"), 2);
  pool.RemoveGpuCopy("llama2-7b", 4, kT0);
  pool.RemoveGpuCopy("llama2-7b", 9, kT0);
  EXPECT_EQ(pool.HostCopies("llama2-7b"), 1);  // the default keeps the host copy throughout
  EXPECT_TRUE(pool.Sources("nope").empty());
}

TEST(ParameterPoolTest, ReclaimModeRestoresTheCopyWhenTheLastGpuCopyGoes) {
  PoolConfig c = Config(HostCachePolicy::kOneCopy, 3, 100);
  c.reclaim_host_while_on_gpu = true;
  ParameterPool pool(c);
  ASSERT_TRUE(pool.AddModel("m", Bytes::GiB(10), kT0).ok());
  pool.AddGpuCopy("m", 1, Gpu(2, 0));
  pool.AddGpuCopy("m", 2, Gpu(1, 0));
  EXPECT_EQ(pool.HostCopies("m"), 0);
  EXPECT_EQ(pool.TotalHostCacheUsed(), Bytes(0));
  pool.RemoveGpuCopy("m", 1, kT0);
  EXPECT_EQ(pool.HostCopies("m"), 0);
  pool.RemoveGpuCopy("m", 2, kT0);
  EXPECT_TRUE(pool.HostHas("m", 1));  // restored where the last copy was
  EXPECT_TRUE(pool.InvariantHolds());
}

TEST(ParameterPoolTest, KeepAliveIsLruWithinCapacityAndExpires) {
  ParameterPool pool(Config(HostCachePolicy::kKeepAlive, 2, 30));
  for (const char* m : {"a", "b", "c", "huge"}) {
    ASSERT_TRUE(pool.AddModel(m, Bytes::GiB(std::string(m) == "huge" ? 40 : 13), kT0).ok());
  }
  EXPECT_EQ(pool.TotalHostCacheUsed(), Bytes(0));  // SSD only until loaded
  pool.TouchHost("a", 0, kT0);
  pool.TouchHost("b", 0, kT0 + absl::Seconds(1));
  pool.TouchHost("a", 0, kT0 + absl::Seconds(2));  // a is now the most recent
  pool.TouchHost("c", 0, kT0 + absl::Seconds(3));  // evicts b
  EXPECT_TRUE(pool.HostHas("a", 0));
  EXPECT_FALSE(pool.HostHas("b", 0));
  EXPECT_TRUE(pool.HostHas("c", 0));
  pool.TouchHost("huge", 0, kT0);  // larger than the cache: not cached, nothing evicted
  EXPECT_FALSE(pool.HostHas("huge", 0));
  EXPECT_TRUE(pool.HostHas("a", 0));
  pool.Expire(kT0 + absl::Seconds(2) + absl::Minutes(5));
  EXPECT_FALSE(pool.HostHas("a", 0));
  EXPECT_TRUE(pool.HostHas("c", 0));
  pool.Expire(kT0 + absl::Seconds(3) + absl::Minutes(5));
  EXPECT_EQ(pool.TotalHostCacheUsed(), Bytes(0));
  EXPECT_TRUE(pool.InvariantHolds());
}

TEST(ParameterPoolTest, AllCacheAndNone) {
  ParameterPool all(Config(HostCachePolicy::kAllCache, 3, 1));
  ASSERT_TRUE(all.AddModel("m", Bytes::GiB(13), kT0).ok());
  EXPECT_EQ(all.HostCopies("m"), 3);
  EXPECT_EQ(all.Sources("m").size(), 3u);
  ParameterPool none(Config(HostCachePolicy::kNone, 3, 100));
  ASSERT_TRUE(none.AddModel("m", Bytes::GiB(13), kT0).ok());
  none.TouchHost("m", 1, kT0);
  EXPECT_EQ(none.HostCopies("m"), 0);
  EXPECT_TRUE(none.InvariantHolds());
}

TEST(ParameterPoolTest, LostHostRehomesItsCopies) {
  ParameterPool pool(Config(HostCachePolicy::kOneCopy, 2, 100));
  ASSERT_TRUE(pool.AddModel("a", Bytes::GiB(10), kT0).ok());
  ASSERT_TRUE(pool.AddModel("b", Bytes::GiB(10), kT0).ok());
  const int a_node = pool.HostHas("a", 0) ? 0 : 1;
  pool.LoseHost(a_node, kT0);
  EXPECT_TRUE(pool.HostHas("a", 1 - a_node));
  EXPECT_EQ(pool.HostCacheUsed(a_node), Bytes(0));
  EXPECT_TRUE(pool.InvariantHolds());
}

TEST(ParameterPoolTest, ValidatePoolConfigNamesTheField) {
  PoolConfig c;
  c.nodes = 0;
  EXPECT_NE(ValidatePoolConfig(c).message().find("nodes"), std::string::npos);
  c = PoolConfig{};
  c.keep_alive = -absl::Seconds(1);
  EXPECT_NE(ValidatePoolConfig(c).message().find("keep_alive"), std::string::npos);
  c = PoolConfig{};
  c.host_cache_per_node = Bytes(-1);
  EXPECT_NE(ValidatePoolConfig(c).message().find("host_cache_per_node"), std::string::npos);
  EXPECT_TRUE(ValidatePoolConfig(PoolConfig{}).ok());
}

// The one-copy invariant under random GPU copy churn and host failures, with and without
// reclaiming host copies while a GPU holds the model.
TEST(ParameterPoolPropertyTest, OneCopyInvariantUnderRandomChurn) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    PoolConfig c = Config(HostCachePolicy::kOneCopy, 1 + static_cast<int>(rng() % 6), 60);
    c.reclaim_host_while_on_gpu = rng() % 2 == 0;
    ParameterPool pool(c);
    const int models = 1 + static_cast<int>(rng() % 10);
    for (int m = 0; m < models; ++m) {
      (void)pool.AddModel("m" + std::to_string(m), Bytes::GiB(1 + rng() % 20), kT0);
    }
    std::vector<std::pair<std::string, int64_t>> live;
    int64_t next_instance = 0;
    bool lost_any = false;
    for (int op = 0; op < 200; ++op) {
      const std::string model = "m" + std::to_string(rng() % models);
      const int dice = static_cast<int>(rng() % 100);
      if (dice < 50) {
        pool.AddGpuCopy(model, next_instance, Gpu(static_cast<int>(rng() % c.nodes), 0));
        live.emplace_back(model, next_instance++);
      } else if (dice < 98 && !live.empty()) {
        const size_t i = rng() % live.size();
        pool.RemoveGpuCopy(live[i].first, live[i].second, kT0);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (c.nodes > 1 && !lost_any) {
        pool.LoseHost(static_cast<int>(rng() % c.nodes), kT0);
        lost_any = true;
      }
      ASSERT_TRUE(pool.InvariantHolds()) << "seed " << seed << " op " << op;
      for (int m = 0; m < models; ++m) {
        const std::string name = "m" + std::to_string(m);
        if (!pool.HasModel(name) || lost_any) {
          continue;
        }
        const int expected = pool.GpuCopies(name) == 0 || !c.reclaim_host_while_on_gpu ? 1 : 0;
        ASSERT_EQ(pool.HostCopies(name), expected) << "seed " << seed << " " << name;
      }
    }
  }
}

TEST(ParameterPoolPropertyTest, KeepAliveNeverExceedsCapacity) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    PoolConfig c = Config(HostCachePolicy::kKeepAlive, 1 + static_cast<int>(rng() % 4), 50);
    c.keep_alive = absl::Seconds(1 + rng() % 30);
    ParameterPool pool(c);
    for (int m = 0; m < 12; ++m) {
      ASSERT_TRUE(pool.AddModel("m" + std::to_string(m), Bytes::GiB(1 + rng() % 30), kT0).ok());
    }
    absl::Time now = kT0;
    for (int op = 0; op < 300; ++op) {
      now += absl::Milliseconds(rng() % 2000);
      if (rng() % 5 == 0) {
        pool.Expire(now);
      } else {
        pool.TouchHost("m" + std::to_string(rng() % 12), static_cast<int>(rng() % c.nodes), now);
      }
      ASSERT_TRUE(pool.InvariantHolds()) << "seed " << seed << " op " << op;
    }
  }
}

}  // namespace
}  // namespace sluice::core::blitz
