#include "core/perf/table_latency_model.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

// A clean monotone profile: t = (0.01 + 0.002 b) * max(1, 0.4 / s) / q^0.5.
double Clean(int b, double s, double q) {
  return (0.01 + 0.002 * b) * std::max(1.0, 0.4 / s) / std::sqrt(q);
}

std::vector<ProfilePoint> CleanGrid() {
  std::vector<ProfilePoint> pts;
  for (int b : {1, 2, 4, 8, 16}) {
    for (double s : {0.2, 0.4, 0.6, 0.8, 1.0}) {
      for (double q : {0.25, 0.5, 1.0})
        pts.push_back({"m", b, s, q, Clean(b, s, q), 0});
    }
  }
  return pts;
}

TEST(TableLatencyModelTest, ExactAtGridPoints) {
  std::vector<ProfilePoint> pts = CleanGrid();
  auto m = TableLatencyModel::Create(pts);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->adjusted_cells(), 0);
  EXPECT_EQ((*m)->filled_cells(), 0);
  for (const ProfilePoint& p : pts) {
    EXPECT_NEAR((*m)->LatencySeconds(p.batch, p.sm_share, p.time_quota), p.latency_s, 1e-15);
  }
}

TEST(TableLatencyModelTest, LinearInShareAndQuotaLogLinearInBatch) {
  auto m = *TableLatencyModel::Create(CleanGrid());
  // Halfway between shares 0.2 and 0.4 at b = 4, q = 1.
  EXPECT_NEAR(m->LatencySeconds(4, 0.3, 1.0), 0.5 * (Clean(4, 0.2, 1) + Clean(4, 0.4, 1)), 1e-15);
  // A quarter of the way from quota 0.5 to 1.
  EXPECT_NEAR(m->LatencySeconds(2, 0.6, 0.625), 0.75 * Clean(2, 0.6, 0.5) + 0.25 * Clean(2, 0.6, 1),
              1e-15);
  // Batch 4 * sqrt(2) lies halfway between 4 and 8 in log space; batch 6 is 58.5% of the way.
  double w = std::log(6.0 / 4.0) / std::log(2.0);
  EXPECT_NEAR(m->LatencySeconds(6, 1.0, 1.0), (1 - w) * Clean(4, 1, 1) + w * Clean(8, 1, 1), 1e-15);
}

TEST(TableLatencyModelTest, OutsideTheGrid) {
  auto m = *TableLatencyModel::Create(CleanGrid());
  EXPECT_DOUBLE_EQ(m->LatencySeconds(32, 1.0, 1.0), Clean(16, 1, 1) * 2);  // b / b_max
  EXPECT_DOUBLE_EQ(m->LatencySeconds(1, 0.1, 1.0), Clean(1, 0.2, 1) * 2);  // s_min / s
  EXPECT_DOUBLE_EQ(m->LatencySeconds(1, 1.0, 0.1), Clean(1, 1, 0.25));     // quota clamped
  EXPECT_DOUBLE_EQ(m->LatencySeconds(0, 1.5, 2.0), Clean(1, 1, 1));        // clamped
}

TEST(TableLatencyModelTest, NoisyRowBecomesMonotone) {
  // Dilu bert-base bs=1: 16.1 ms at 10% SM, 15.2 ms at 20%, 16.9 ms at 30%, then ~16 ms.
  std::vector<ProfilePoint> pts = {{"bert", 1, 0.1, 1, 0.0161, 1},
                                   {"bert", 1, 0.2, 1, 0.0152, 2},
                                   {"bert", 1, 0.3, 1, 0.0169, 3},
                                   {"bert", 1, 0.4, 1, 0.0162, 4}};
  auto m = *TableLatencyModel::Create(pts);
  EXPECT_GT(m->adjusted_cells(), 0);
  for (double s = 0.1; s < 0.4; s += 0.01) {
    EXPECT_GE(m->LatencySeconds(1, s), m->LatencySeconds(1, s + 0.01)) << s;
  }
  // Pool adjacent violators merges all four readings into their mean.
  EXPECT_NEAR(m->LatencySeconds(1, 0.4), (0.0161 + 0.0152 + 0.0169 + 0.0162) / 4, 1e-12);
}

TEST(TableLatencyModelTest, FillsMissingCellsFromNearestQuota) {
  std::vector<ProfilePoint> pts = {
      {"m", 1, 0.5, 0.5, 0.2, 1}, {"m", 1, 0.5, 1.0, 0.1, 2}, {"m", 1, 1.0, 1.0, 0.05, 3}};
  auto m = *TableLatencyModel::Create(pts);
  EXPECT_EQ(m->filled_cells(), 1);
  // (s = 1, q = 0.5) copies (s = 1, q = 1), the nearest present quota.
  EXPECT_DOUBLE_EQ(m->LatencySeconds(1, 1.0, 0.5), 0.05);
}

// Property: whatever the (noisy) input, the interpolated model is monotone.
TEST(TableLatencyModelTest, RandomNoisyTablesAreMonotone) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> noise(0.0, 0.3);
    std::vector<ProfilePoint> pts;
    for (int b : {1, 2, 4, 8, 32}) {
      for (double s : {0.1, 0.3, 0.5, 1.0}) {
        for (double q : {0.2, 0.6, 1.0})
          pts.push_back({"m", b, s, q, Clean(b, s, q) * noise(rng)});
      }
    }
    auto m = *TableLatencyModel::Create(pts);
    std::uniform_real_distribution<double> u(0.01, 1.0), d(0.0, 0.2);
    std::uniform_int_distribution<int> batch(1, 64), step(0, 8);
    for (int i = 0; i < 200; ++i) {
      int b = batch(rng);
      double s = u(rng), q = u(rng), t = m->LatencySeconds(b, s, q);
      const double ulps = t * 1e-12;  // trilinear weights round; flat regions may jitter by an ulp
      ASSERT_LE(t, m->LatencySeconds(b + step(rng), s, q) + ulps) << "batch " << b;
      ASSERT_GE(t + ulps, m->LatencySeconds(b, s + d(rng), q)) << "share " << s;
      ASSERT_GE(t + ulps, m->LatencySeconds(b, s, q + d(rng))) << "quota " << q;
    }
  }
}

TEST(TableLatencyModelTest, TrainingAndPrefill) {
  TableOptions options{.training_batch = 8, .training_factor = 3.0, .prefill_per_token_s = 1e-4};
  auto m = *TableLatencyModel::Create(CleanGrid(), options);
  EXPECT_DOUBLE_EQ(absl::ToDoubleSeconds(m->IterationTime(0.6)), 3 * Clean(8, 0.6, 1));
  EXPECT_NEAR(absl::ToDoubleSeconds(m->PrefillLatency(100, 0.5)),
              m->LatencySeconds(1, 0.5) + 100 * 1e-4 / 0.5, 1e-12);
  auto no_prefill = *TableLatencyModel::Create(CleanGrid());
  EXPECT_EQ(no_prefill->PrefillLatency(100, 0.5), absl::ZeroDuration());
}

TEST(TableLatencyModelTest, RejectsBadPoints) {
  EXPECT_FALSE(TableLatencyModel::Create({}).ok());
  std::vector<ProfilePoint> bad = {{"gpt", 1, 0.5, 1.0, -1.0, 17}};
  auto r = TableLatencyModel::Create(bad);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(":17"));
  EXPECT_THAT(r.status().message(), HasSubstr("latency_s"));
  bad = {{"gpt", 1, 1.5, 1.0, 1.0, 3}};
  EXPECT_THAT(TableLatencyModel::Create(bad).status().message(), HasSubstr("sm_share"));
  bad = {{"gpt", 0, 0.5, 1.0, 1.0, 3}};
  EXPECT_THAT(TableLatencyModel::Create(bad).status().message(), HasSubstr("batch"));
  bad = {{"gpt", 1, 0.5, 0.0, 1.0, 3}};
  EXPECT_THAT(TableLatencyModel::Create(bad).status().message(), HasSubstr("time_quota"));
}

}  // namespace
}  // namespace sluice::core
