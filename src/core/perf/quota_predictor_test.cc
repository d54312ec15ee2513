#include "core/perf/quota_predictor.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

// A synthetic model family with the structure the predictor assumes (max of a spatial latency
// and a model-specific time-slicing floor) but different constants per model.
struct Synthetic {
  double floor_s;      // launch floor at b 1
  double work_s;       // compute-bound work of b 8 at the full GPU
  double slice_s;      // F(0.1)
  double slice_shape;  // F(q) = slice_s * (0.1 / q)^slice_shape
  double Latency(int b, double s, double q) const {
    double a = floor_s * std::pow(b, 0.15);
    double k = work_s * std::pow(b / 8.0, 0.9) / s;
    double t = std::pow(std::pow(a, 3) + std::pow(k, 3), 1.0 / 3);
    if (q >= 1.0)
      return t;
    double f = slice_s * std::pow(0.1 / q, slice_shape);
    return std::max(t, f);
  }
};

std::vector<ProfilePoint> Grid(const std::string& name, const Synthetic& m) {
  std::vector<ProfilePoint> pts;
  for (int b : {1, 2, 4, 8}) {
    for (int s = 5; s <= 100; s += 5) {
      for (int q = 10; q <= 100; q += 10)
        pts.push_back({name, b, s / 100.0, q / 100.0, m.Latency(b, s / 100.0, q / 100.0), 0});
    }
  }
  return pts;
}

std::vector<Synthetic> Family(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Synthetic> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({0.005 + 0.02 * u(rng), 0.002 + 0.01 * u(rng), 0.05 + 0.5 * u(rng),
                   1.2 + 0.6 * u(rng)});
  }
  return out;
}

std::vector<ProfilePoint> PlanPoints(const std::vector<ProfilePoint>& all) {
  std::vector<ProfilePoint> out;
  for (const ProfilePoint& p : all) {
    for (const ProfileConfig& c : kProfilePlan) {
      if (p.batch == c.batch && std::abs(p.sm_share - c.sm_share) < 1e-9 &&
          std::abs(p.time_quota - c.time_quota) < 1e-9)
        out.push_back(p);
    }
  }
  return out;
}

double Mape(const CalibratedPredictor& cp, const std::vector<ProfilePoint>& pts) {
  double sum = 0;
  for (const ProfilePoint& p : pts)
    sum += std::abs(cp.Seconds(p.batch, p.sm_share, p.time_quota) - p.latency_s) / p.latency_s;
  return 100 * sum / pts.size();
}

class QuotaPredictorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<Synthetic> fam = Family(20, 7);
    for (size_t i = 0; i < fam.size(); ++i) {
      std::vector<ProfilePoint> g = Grid(absl::StrCat("m", i), fam[i]);
      train_.insert(train_.end(), g.begin(), g.end());
    }
    held_out_ = Grid("new", {0.012, 0.006, 0.2, 1.5});
  }
  std::vector<ProfilePoint> train_;
  std::vector<ProfilePoint> held_out_;
};

TEST_F(QuotaPredictorTest, PredictsAnUnseenModelFromSixPoints) {
  auto lp = LatencyPredictor::Train(train_);
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_EQ(lp->models(), 20);
  std::vector<ProfilePoint> plan = PlanPoints(held_out_);
  ASSERT_EQ(plan.size(), kProfilePlan.size());
  auto cp = lp->Calibrate(plan);
  ASSERT_TRUE(cp.ok()) << cp.status();
  EXPECT_LT(Mape(*cp, held_out_), 5.0);
  // The profiled points themselves are reproduced closely.
  EXPECT_LT(Mape(*cp, plan), 3.0);
}

TEST_F(QuotaPredictorTest, LearnsTheSpatialShape) {
  auto lp = LatencyPredictor::Train(train_);
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_DOUBLE_EQ(lp->shape().alpha, 1.0);  // the family's K / s
  EXPECT_DOUBLE_EQ(lp->shape().p, 3.0);
  EXPECT_DOUBLE_EQ(lp->shape().gamma, 0.9);
  EXPECT_EQ(lp->domain().min_quota, 0.1);
  EXPECT_EQ(lp->domain().max_batch, 8);
}

TEST_F(QuotaPredictorTest, MonotoneEverywhere) {
  auto lp = LatencyPredictor::Train(train_);
  ASSERT_TRUE(lp.ok());
  auto cp = lp->Calibrate(PlanPoints(held_out_));
  ASSERT_TRUE(cp.ok());
  for (int b = 1; b <= 40; b += 3) {
    for (double s = 0.01; s <= 1.0; s += 0.07) {
      for (double q = 0.02; q <= 1.0; q += 0.05) {
        double t = cp->Seconds(b, s, q);
        ASSERT_TRUE(std::isfinite(t) && t > 0);
        EXPECT_LE(t, cp->Seconds(b + 1, s, q) * (1 + 1e-12)) << b << " " << s << " " << q;
        EXPECT_GE(t, cp->Seconds(b, std::min(1.0, s + 0.01), q) * (1 - 1e-12));
        EXPECT_GE(t, cp->Seconds(b, s, std::min(1.0, q + 0.01)) * (1 - 1e-12));
      }
    }
  }
}

TEST_F(QuotaPredictorTest, RefusesConfigurationsOutsideItsData) {
  auto lp = LatencyPredictor::Train(train_);
  ASSERT_TRUE(lp.ok());
  auto cp = lp->Calibrate(PlanPoints(held_out_));
  ASSERT_TRUE(cp.ok());
  EXPECT_TRUE(cp->Predict(4, 0.5, 0.5).ok());
  EXPECT_THAT(cp->Predict(16, 0.5, 0.5).status().message(), HasSubstr("batch 16"));
  EXPECT_THAT(cp->Predict(4, 0.02, 0.5).status().message(), HasSubstr("allowed 0.05..1"));
  EXPECT_THAT(cp->Predict(4, 0.5, 0.05).status().message(), HasSubstr("quota 0.05"));
}

TEST_F(QuotaPredictorTest, CalibrationNamesTheMissingConfiguration) {
  auto lp = LatencyPredictor::Train(train_);
  ASSERT_TRUE(lp.ok());
  std::vector<ProfilePoint> plan = PlanPoints(held_out_);
  std::erase_if(plan, [](const ProfilePoint& p) {
    return p.batch == 8 && p.sm_share == 0.05 && p.time_quota == 1.0;
  });
  ASSERT_EQ(plan.size(), kProfilePlan.size() - 1);
  auto cp = lp->Calibrate(plan);
  ASSERT_FALSE(cp.ok());
  EXPECT_THAT(cp.status().message(), HasSubstr("batch=8 sm=0.05 quota=1"));
}

TEST(QuotaPredictorErrors, TrainingNeedsTwoCompleteModels) {
  std::vector<ProfilePoint> one = Grid("only", {0.01, 0.005, 0.1, 1.5});
  EXPECT_FALSE(LatencyPredictor::Train(one).ok());
  std::vector<ProfilePoint> bad = one;
  bad[3].time_quota = 1.5;
  bad[3].line = 42;
  auto r = LatencyPredictor::Train(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("line 42"));
  EXPECT_THAT(r.status().message(), HasSubstr("time_quota"));
}

TEST(PredictorLatencyModelTest, BacksALatencyModel) {
  std::vector<ProfilePoint> pts;
  std::vector<Synthetic> fam = Family(5, 3);
  for (size_t i = 0; i < fam.size(); ++i) {
    std::vector<ProfilePoint> g = Grid(absl::StrCat("m", i), fam[i]);
    pts.insert(pts.end(), g.begin(), g.end());
  }
  auto lp = LatencyPredictor::Train(pts);
  ASSERT_TRUE(lp.ok());
  auto cp = lp->Calibrate(PlanPoints(Grid("x", fam[0])));
  ASSERT_TRUE(cp.ok());
  PredictorLatencyModel m(*cp);
  EXPECT_NEAR(absl::ToDoubleSeconds(m.BatchLatency(8, 1.0, 1.0)), fam[0].Latency(8, 1, 1),
              0.02 * fam[0].Latency(8, 1, 1));
  // Below the smallest profiled quota the floor keeps growing (1 / q).
  EXPECT_GT(m.BatchLatency(1, 1.0, 0.05), m.BatchLatency(1, 1.0, 0.1));
  EXPECT_GT(m.IterationTime(0.5), absl::ZeroDuration());
}

}  // namespace
}  // namespace sluice::core
