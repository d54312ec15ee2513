// Gateway dispatch (least-loaded over load buckets, checked against a brute-force minimum on
// seeded random operation sequences) and the metrics' percentile definition. The batching rule is
// tested in core/serving.
#include "sim/engine/gateway.h"

#include <map>
#include <random>

#include "gtest/gtest.h"

#include "sim/engine/metrics.h"

namespace sluice::sim {
namespace {

TEST(GatewayTest, PicksTheLeastLoadedWarmInstance) {
  Gateway g;
  EXPECT_FALSE(g.LeastLoaded().has_value());
  g.AddWarm(3, 2);
  g.AddWarm(5, 0);
  g.AddWarm(9, 1);
  EXPECT_EQ(*g.LeastLoaded(), 5);
  g.UpdateLoad(5, 0, 3);
  EXPECT_EQ(*g.LeastLoaded(), 9);
  g.RemoveWarm(9, 1);
  EXPECT_EQ(*g.LeastLoaded(), 3);
  EXPECT_EQ(g.warm_count(), 2);
}

TEST(GatewayTest, RandomOperationsAlwaysReturnAMinimumLoad) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    Gateway g;
    std::map<int32_t, int64_t> load;  // reference model
    for (int step = 0; step < 500; ++step) {
      const int op = static_cast<int>(rng() % 4);
      const int32_t id = static_cast<int32_t>(rng() % 20);
      if (op == 0 && !load.contains(id)) {
        load[id] = static_cast<int64_t>(rng() % 5);
        g.AddWarm(id, load[id]);
      } else if (op == 1 && load.contains(id)) {
        g.RemoveWarm(id, load[id]);
        load.erase(id);
      } else if (load.contains(id)) {
        const int64_t next = std::max<int64_t>(0, load[id] + static_cast<int64_t>(rng() % 7) - 3);
        g.UpdateLoad(id, load[id], next);
        load[id] = next;
      }
      ASSERT_EQ(g.warm_count(), static_cast<int>(load.size())) << "seed " << seed;
      if (load.empty()) {
        ASSERT_FALSE(g.LeastLoaded().has_value()) << "seed " << seed;
        continue;
      }
      int64_t min = INT64_MAX;
      for (const auto& [i, l] : load)
        min = std::min(min, l);
      const auto pick = g.LeastLoaded();
      ASSERT_TRUE(pick.has_value() && load.contains(*pick)) << "seed " << seed;
      ASSERT_EQ(load[*pick], min) << "seed " << seed << " step " << step;
    }
  }
}

TEST(MetricsTest, NearestRankPercentilesSvrAndThroughput) {
  FunctionMetrics m(absl::Milliseconds(50));
  for (int i = 1; i <= 100; ++i) {
    m.OnArrival();
    m.OnCompletion(absl::Milliseconds(i));
  }
  m.OnArrival();
  m.OnDrop(1);
  const FunctionResult r = m.Summarize("f", absl::Seconds(10));
  EXPECT_EQ(r.requests, 101);
  EXPECT_EQ(r.completed, 100);
  EXPECT_DOUBLE_EQ(r.p50_ms, 50);
  EXPECT_DOUBLE_EQ(r.p95_ms, 95);
  EXPECT_DOUBLE_EQ(r.p99_ms, 99);
  EXPECT_DOUBLE_EQ(r.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(r.svr, 51.0 / 101);  // 51..100 ms exceed 50 ms, plus the drop
  EXPECT_DOUBLE_EQ(r.throughput_rps, 10);
}

TEST(MetricsTest, ClusterIntegralsCoverTheHorizonOnly) {
  const absl::Time t0 = absl::UnixEpoch();
  ClusterMetrics c(t0, absl::Seconds(10));
  c.Update(t0, 0.5, 1);
  c.Update(t0 + absl::Seconds(4), 1.5, 2);
  c.Update(t0 + absl::Seconds(12), 0, 0);  // after the horizon: ignored for the peak
  RunResult r;
  c.Finish(r);
  EXPECT_DOUBLE_EQ(r.gpu_seconds, 0.5 * 4 + 1.5 * 6);
  EXPECT_DOUBLE_EQ(r.mean_active_gpus, (1 * 4 + 2 * 6) / 10.0);
  EXPECT_EQ(r.peak_active_gpus, 2);
}

}  // namespace
}  // namespace sluice::sim
