// Fluid mode's latency histogram: percentiles merged with exact latencies agree with the exact
// nearest rank within the bucket width (1 %), weights act as repeated values.
#include "sim/engine/latency_histogram.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "sim/engine/metrics.h"

namespace sluice::sim {
namespace {

TEST(LatencyHistogramTest, MergedPercentilesMatchExactNearestRank) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 gen(seed);
    std::lognormal_distribution<double> dist(3.0, 1.0);
    std::vector<double> exact, all;
    LatencyHistogram h;
    for (int i = 0; i < 2000; ++i) {
      const double v = dist(gen);
      all.push_back(v);
      if (i % 3 == 0) {
        exact.push_back(v);
      } else {
        h.Add(v, 1);
      }
    }
    std::sort(exact.begin(), exact.end());
    std::sort(all.begin(), all.end());
    for (double p : {0.01, 0.5, 0.95, 0.99, 1.0}) {
      const double want = NearestRank(all, p);
      EXPECT_NEAR(MergedPercentile(exact, h, p), want, 0.011 * want)
          << "seed " << seed << " p " << p;
    }
  }
}

TEST(LatencyHistogramTest, WeightsAreRepeatedValuesAndEmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(MergedPercentile({}, h, 0.5), 0);
  h.Add(10, 98);
  h.Add(1000, 2);
  EXPECT_NEAR(h.total(), 100, 1e-12);
  EXPECT_NEAR(h.sum_ms(), 98 * 10 + 2000, 1e-9);
  EXPECT_NEAR(MergedPercentile({}, h, 0.98), 10, 0.1);
  EXPECT_NEAR(MergedPercentile({}, h, 0.99), 1000, 10);
  // One exact value above everything takes the top rank.
  EXPECT_EQ(MergedPercentile({5000}, h, 1.0), 5000);
}

// The histogram keeps only the range of buckets used; adding in any order (extending it down as
// well as up) gives the same percentiles, and the range is as narrow as the values.
TEST(LatencyHistogramTest, AnyOrderOfAddsGivesTheSamePercentiles) {
  const double values[] = {120, 0.5, 80, 3000, 45, 45, 260, 0.0005, 990};
  LatencyHistogram up, down;
  for (double v : values) up.Add(v, 1.5);
  for (int i = 8; i >= 0; --i) down.Add(values[i], 1.5);
  for (double p : {0.05, 0.2, 0.5, 0.8, 0.95, 1.0})
    EXPECT_EQ(MergedPercentile({}, up, p), MergedPercentile({}, down, p)) << p;
  EXPECT_EQ(up.first_bucket(), down.first_bucket());
  EXPECT_EQ(up.buckets(), down.buckets());
  LatencyHistogram narrow;
  narrow.Add(100, 1);
  narrow.Add(110, 1);
  EXPECT_EQ(narrow.first_bucket(), LatencyHistogram::BucketOf(100));
  EXPECT_EQ(narrow.buckets().size(),
            LatencyHistogram::BucketOf(110) - LatencyHistogram::BucketOf(100) + 1);
}

}  // namespace
}  // namespace sluice::sim
