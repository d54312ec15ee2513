// Unit tests for the CV-weighted smoother and its delayed reclaim.
#include "core/quart/replica_smoother.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

ReplicaSmoother Make(SmootherConfig c = {}, int stages = 3) {
  auto s = ReplicaSmoother::Create(c, stages);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

SmoothInput In(int replicas, double demand, double cv = 1.0) {
  SmoothInput s;
  s.replicas = replicas;
  s.demand = demand;
  s.predicted_cv = cv;
  return s;
}

TEST(ReplicaSmoother, BetaGrowsWithCv) {
  ReplicaSmoother s = Make();
  EXPECT_DOUBLE_EQ(s.Beta(0), 0.5);
  EXPECT_DOUBLE_EQ(s.Beta(1), 0.75);
  EXPECT_GT(s.Beta(4), 0.97);
  EXPECT_LT(s.Beta(4), 1.0);
}

TEST(ReplicaSmoother, Eq7AveragesTheNeighbours) {
  ReplicaSmoother s = Make();
  const std::vector<SmoothInput> in = {In(4, 2), In(8, 6, 1.0), In(4, 4)};
  // beta(1) = 0.75: 0.75 x 6 + 0.25 x (2 + 4) / 2.
  EXPECT_DOUBLE_EQ(s.SmoothedDemand(in, 1), 0.75 * 6 + 0.25 * 3);
  EXPECT_DOUBLE_EQ(s.SmoothedDemand(in, 0), 0.75 * 2 + 0.25 * 6);  // one neighbour
}

TEST(ReplicaSmoother, ReclaimsOneAfterTheHold) {
  ReplicaSmoother s = Make();
  std::vector<SmoothInput> in = {In(2, 2), In(6, 2), In(2, 2)};
  EXPECT_EQ(s.Reclaim(in, kT0), (std::vector<int>{0, 0, 0}));  // clock starts
  EXPECT_EQ(s.NextWakeup(), kT0 + absl::Seconds(30));
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(29)), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(30)), (std::vector<int>{0, 1, 0}));
  in[1].replicas = 5;
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(45)), (std::vector<int>{0, 0, 0}));  // restarted
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(60)), (std::vector<int>{0, 1, 0}));
}

TEST(ReplicaSmoother, NeverBelowFloors) {
  ReplicaSmoother s = Make();
  std::vector<SmoothInput> in = {In(5, 0), In(5, 0), In(5, 0)};
  in[0].min_replicas = 5;
  in[1].stable_floor = 5;
  in[2].min_replicas = 1;
  s.Reclaim(in, kT0);
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Hours(1)), (std::vector<int>{0, 0, 1}));
}

TEST(ReplicaSmoother, UpstreamBurstDelaysTheReclaim) {
  ReplicaSmoother s = Make();
  std::vector<SmoothInput> in = {In(4, 4, 3.0), In(6, 2), In(2, 2)};  // stage 0 bursting
  s.Reclaim(in, kT0);
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(40)), (std::vector<int>{0, 0, 0}));
  in[0].predicted_cv = 0.5;  // the burst has passed: the clock runs from the last decision
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(50)), (std::vector<int>{0, 0, 0}));  // (t 40)
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(69)), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(s.Reclaim(in, kT0 + absl::Seconds(70)), (std::vector<int>{0, 1, 0}));
}

TEST(ReplicaSmoother, UpstreamDelayLengthensTheHold) {
  ReplicaSmoother s = Make();
  std::vector<SmoothInput> in = {In(2, 2), In(6, 2), In(2, 2)};
  in[1].upstream_delay = absl::Seconds(10);
  s.Reclaim(in, kT0);
  EXPECT_EQ(s.NextWakeup(), kT0 + absl::Seconds(50));
}

TEST(ReplicaSmoother, ValidationNamesTheField) {
  SmootherConfig c;
  c.beta_min = -0.1;
  EXPECT_NE(ReplicaSmoother::Create(c, 2).status().message().find("beta_min"), std::string::npos);
  c = {};
  c.max_reclaim_per_step = 0;
  EXPECT_NE(ReplicaSmoother::Create(c, 2).status().message().find("max_reclaim_per_step"),
            std::string::npos);
  EXPECT_NE(ReplicaSmoother::Create({}, 0).status().message().find("stages"), std::string::npos);
}

}  // namespace
}  // namespace sluice::core
