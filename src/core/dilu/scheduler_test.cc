// Hand-worked cases of Algorithm 1 (SelectOptGPU arithmetic in the comments) and the orderings
// of DiluScheduler. Property tests live in scheduler_property_test.cc.
#include "core/dilu/scheduler.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  void Init(int nodes, SchedulerConfig config = {}) {
    state_ = std::make_unique<ClusterState>(ClusterSpec::Uniform(nodes, NodeSpec{}));
    auto s = DiluScheduler::Create(config);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }
  static InstanceDemand Demand(int inst, int fn, double req, double lim, double gib, int gpus = 1,
                               FunctionKind kind = FunctionKind::kInference) {
    InstanceDemand d;
    d.function = FunctionId(fn);
    d.instance = InstanceId(inst);
    d.kind = kind;
    d.gpus = gpus;
    d.memory_per_gpu = Bytes::GiB(gib);
    d.quota = {req, lim};
    return d;
  }
  // Commits `d` on `gpus` directly (bypassing Place) and notifies the scheduler.
  void Put(const InstanceDemand& d, std::vector<int> gpus) {
    for (int g : gpus) {
      Allocation a{d.instance, d.function, GpuId(g), d.memory_per_gpu, d.quota};
      ASSERT_TRUE(state_->Add(a).ok());
      sched_->OnAdded(a, *state_);
    }
  }
  // Places and commits; returns the chosen GPU ids.
  std::vector<int> PlaceAndCommit(const InstanceDemand& d) {
    auto placed = sched_->Place(d, *state_);
    EXPECT_TRUE(placed.ok()) << placed.status();
    std::vector<int> ids;
    if (!placed.ok())
      return ids;
    for (GpuId g : *placed)
      ids.push_back(static_cast<int>(g.value()));
    Put(d, ids);
    return ids;
  }
  void RemoveInstance(int inst) {
    for (const Allocation& a : state_->Remove(InstanceId(inst)))
      sched_->OnRemoved(a, *state_);
  }

  std::unique_ptr<ClusterState> state_;
  std::unique_ptr<DiluScheduler> sched_;
};

TEST_F(SchedulerTest, FirstInstanceOpensLowestGpuThenPacksOntoIt) {
  Init(1);
  EXPECT_EQ(PlaceAndCommit(Demand(1, 1, 0.3, 0.6, 10)), std::vector<int>{0});
  // GPU 0 after B: newReq = 0.5 <= 1, newLim = 1.0 <= 1.5, newMem = 18 <= 40: fits, so tier 2
  // takes it before a new GPU. score = 0.5 (1 - 0.5) + 0.5 (1 - 18/40) = 0.25 + 0.275 = 0.525.
  EXPECT_DOUBLE_EQ(sched_->Score(state_->gpu(GpuId(0)), Room{0.2, 0.4, Bytes::GiB(8).count()}),
                   0.525);
  EXPECT_EQ(PlaceAndCommit(Demand(2, 2, 0.2, 0.4, 8)), std::vector<int>{0});
}

TEST_F(SchedulerTest, BestFitPicksMinimumWeightedFragment) {
  Init(1);
  Put(Demand(1, 1, 0.3, 0.6, 10), {0});
  Put(Demand(9, 9, 0.3, 0.6, 10), {0});  // GPU 0: req 0.6, lim 1.2, mem 20
  Put(Demand(2, 2, 0.3, 0.6, 30), {1});  // GPU 1: req 0.3, lim 0.6, mem 30
  // Demand <0.2, 0.3>, 5 GiB.
  // GPU 0: newReq 0.8, newLim 1.5 (<= 1.5), mem 25: 0.5 (0.2) + 0.5 (1 - 25/40) = 0.2875
  // GPU 1: newReq 0.5, newLim 0.9, mem 35:           0.5 (0.5) + 0.5 (1 - 35/40) = 0.3125
  EXPECT_EQ(PlaceAndCommit(Demand(3, 3, 0.2, 0.3, 5)), std::vector<int>{0});
}

TEST_F(SchedulerTest, WeightsShiftTheChoiceTowardsMemoryComplementarity) {
  SchedulerConfig c;
  c.alpha = 0.2;
  c.beta = 0.8;
  Init(1, c);
  Put(Demand(1, 1, 0.3, 0.6, 10), {0});
  Put(Demand(9, 9, 0.3, 0.6, 10), {0});  // GPU 0: req 0.6, lim 1.2, mem 20
  Put(Demand(2, 2, 0.3, 0.6, 30), {1});  // GPU 1: req 0.3, lim 0.6, mem 30
  // GPU 0: 0.2 (0.2) + 0.8 (0.375) = 0.34; GPU 1: 0.2 (0.5) + 0.8 (0.125) = 0.20 -> GPU 1.
  EXPECT_EQ(PlaceAndCommit(Demand(3, 3, 0.2, 0.3, 5)), std::vector<int>{1});
}

TEST_F(SchedulerTest, OmegaAndGammaCapsRejectAGpu) {
  Init(1);
  Put(Demand(1, 1, 0.2, 0.6, 1), {0});
  Put(Demand(9, 9, 0.2, 0.6, 1), {0});  // GPU 0: req 0.4, lim 1.2: + 0.6 = 1.8 > gamma 1.5
  Put(Demand(2, 2, 0.8, 0.8, 1), {1});  // req 0.8: + 0.3 = 1.1 > Omega 1.0
  EXPECT_EQ(PlaceAndCommit(Demand(3, 3, 0.3, 0.6, 1)), std::vector<int>{2});
  // Exactly at the caps is allowed. GPU 1 + <0.2, 0.2> -> req 1.0 (score 0 + 0.5 (1 - 2/40) =
  // 0.475, the best); GPU 0 + <0.3, 0.3> -> lim 1.5 (GPU 1 is then full, GPU 2 scores
  // 0.5 (0.4) + 0.5 (1 - 2/40) = 0.675 > GPU 0's 0.5 (0.3) + 0.5 (1 - 3/40) = 0.6125).
  EXPECT_EQ(PlaceAndCommit(Demand(4, 4, 0.2, 0.2, 1)), std::vector<int>{1});
  EXPECT_EQ(PlaceAndCommit(Demand(5, 5, 0.3, 0.3, 1)), std::vector<int>{0});
}

TEST_F(SchedulerTest, MemoryIsAHardConstraint) {
  Init(1);
  Put(Demand(1, 1, 0.1, 0.1, 35), {0});
  EXPECT_EQ(PlaceAndCommit(Demand(2, 2, 0.1, 0.1, 6)), std::vector<int>{1});
  EXPECT_EQ(PlaceAndCommit(Demand(3, 3, 0.1, 0.1, 5)), std::vector<int>{0});  // 40 == 40
}

TEST_F(SchedulerTest, AffinityTierComesBeforeABetterFitElsewhere) {
  Init(1);
  Put(Demand(1, 7, 0.2, 0.4, 5), {1});   // function 7 on GPU 1 (emptier)
  Put(Demand(2, 8, 0.6, 0.9, 25), {0});  // GPU 0 would be the best fit
  EXPECT_EQ(PlaceAndCommit(Demand(3, 7, 0.2, 0.4, 5)), std::vector<int>{1});
  SchedulerConfig no_wa;
  no_wa.workload_affinity = false;
  Init(1, no_wa);
  Put(Demand(1, 7, 0.2, 0.4, 5), {1});
  Put(Demand(2, 8, 0.6, 0.9, 25), {0});
  EXPECT_EQ(PlaceAndCommit(Demand(3, 7, 0.2, 0.4, 5)), std::vector<int>{0});
}

TEST_F(SchedulerTest, PartnerWorkersAffinityFollowsTheTrainingJobsOtherWorker) {
  SchedulerConfig c;
  c.affinity = AffinityKind::kPartnerWorkers;
  Init(1, c);
  Put(Demand(1, 1, 0.4, 0.8, 10, 2, FunctionKind::kTraining), {0, 1});  // Func-a, 2 workers
  Put(Demand(2, 2, 0.2, 0.4, 5), {0});   // Func-b instance-1 beside worker 1
  Put(Demand(3, 3, 0.3, 0.5, 20), {2});  // GPU 2 would be the best fit for Func-b
  // G_WA = {GPU 1}: the other worker of the job that shares GPU 0 with Func-b.
  EXPECT_EQ(PlaceAndCommit(Demand(4, 2, 0.2, 0.4, 5)), std::vector<int>{1});
}

TEST_F(SchedulerTest, ResourceComplementarityOffIsFirstFitById) {
  SchedulerConfig c;
  c.resource_complementarity = false;
  c.workload_affinity = false;
  Init(1, c);
  Put(Demand(1, 1, 0.1, 0.1, 1), {0});
  Put(Demand(2, 2, 0.7, 0.7, 30), {1});  // the best fit, but GPU 0 comes first
  EXPECT_EQ(PlaceAndCommit(Demand(3, 3, 0.2, 0.2, 5)), std::vector<int>{0});
  Put(Demand(4, 4, 0.7, 0.7, 1), {0});  // GPU 0: req 1.0 now, full
  EXPECT_EQ(PlaceAndCommit(Demand(5, 5, 0.2, 0.2, 5)), std::vector<int>{1});
}

TEST_F(SchedulerTest, MultiGpuLlmShardsUseMemoryWorstFit) {
  Init(1);
  Put(Demand(1, 1, 0.1, 0.1, 30), {0});  // free 10
  Put(Demand(2, 2, 0.1, 0.1, 10), {1});  // free 30
  Put(Demand(3, 3, 0.1, 0.1, 20), {2});  // free 20
  auto ids = PlaceAndCommit(Demand(4, 4, 0.3, 0.5, 8, 2, FunctionKind::kLlmInference));
  EXPECT_EQ(ids, (std::vector<int>{1, 2}));
  // A single-GPU LLM fits a fragment: best fit. GPU 0: req 0.4, mem 38 -> 0.3 + 0.025 = 0.325;
  // GPU 1: req 0.7, mem 26 -> 0.15 + 0.175 = 0.325; GPU 2: req 0.7, mem 36 -> 0.15 + 0.05 = 0.2.
  EXPECT_EQ(PlaceAndCommit(Demand(5, 5, 0.3, 0.5, 8, 1, FunctionKind::kLlmInference)),
            std::vector<int>{2});
}

TEST_F(SchedulerTest, MultiGpuWithoutSameNodeChoosesDistinctGpus) {
  Init(2);
  Put(Demand(1, 1, 0.2, 0.2, 1), {5});
  auto ids = PlaceAndCommit(Demand(2, 2, 0.3, 0.3, 1, 3));
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], 5);  // the only active GPU, then new GPUs in id order
  EXPECT_EQ(ids[1], 0);
  EXPECT_EQ(ids[2], 1);
}

TEST_F(SchedulerTest, SameNodeTrainingTakesOneNode) {
  Init(3);
  Put(Demand(1, 1, 0.9, 0.9, 1), {0});  // node 0: GPU 0 full, 3 idle
  Put(Demand(2, 2, 0.5, 0.5, 1), {4});  // node 1: GPU 4 half full, 3 idle
  InstanceDemand t = Demand(3, 3, 0.4, 0.8, 10, 4, FunctionKind::kTraining);
  t.same_node = true;
  // Node 1 can host all four (GPU 4 has room); node 0 only three.
  auto ids = PlaceAndCommit(t);
  EXPECT_EQ(ids, (std::vector<int>{4, 5, 6, 7}));
  InstanceDemand t2 = Demand(4, 4, 0.3, 0.6, 10, 3, FunctionKind::kTraining);
  t2.same_node = true;
  // GPU 0 and 4 are too full (0.9 + 0.3 > 1); GPUs 5..7 take req 0.7, lim 1.4 -> node 1 holds
  // three fitting active GPUs, which beats opening node 0's idle ones.
  EXPECT_EQ(PlaceAndCommit(t2), (std::vector<int>{5, 6, 7}));
  InstanceDemand t3 = Demand(5, 5, 0.5, 0.5, 10, 4, FunctionKind::kTraining);
  t3.same_node = true;
  EXPECT_EQ(PlaceAndCommit(t3), (std::vector<int>{8, 9, 10, 11}));  // the empty node 2
  InstanceDemand t4 = t3;
  t4.instance = InstanceId(6);
  t4.gpus = 5;  // more GPUs than a node has
  EXPECT_EQ(sched_->Place(t4, *state_).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(SchedulerTest, FullClusterIsResourceExhaustedAndChangesNothing) {
  Init(1);
  for (int i = 0; i < 4; ++i)
    PlaceAndCommit(Demand(i, i, 0.9, 0.9, 1));
  auto r = sched_->Place(Demand(9, 9, 0.2, 0.2, 1, 2), *state_);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  RemoveInstance(2);
  EXPECT_EQ(PlaceAndCommit(Demand(10, 10, 0.2, 0.2, 1)), std::vector<int>{2});
}

TEST_F(SchedulerTest, EmptyClusterIsResourceExhausted) {
  state_ = std::make_unique<ClusterState>(ClusterSpec{});
  sched_ = *DiluScheduler::Create({});
  EXPECT_EQ(sched_->Place(Demand(1, 1, 0.2, 0.2, 1), *state_).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(SchedulerTest, RejectsMalformedDemandsAndConfigs) {
  Init(1);
  EXPECT_EQ(sched_->Place(Demand(1, 1, 0.5, 0.4, 1), *state_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sched_->Place(Demand(1, 1, 0.5, 0.5, 1, 0), *state_).status().code(),
            absl::StatusCode::kInvalidArgument);
  SchedulerConfig bad;
  bad.gamma = 0.5;  // < omega
  EXPECT_FALSE(DiluScheduler::Create(bad).ok());
  bad = {};
  bad.alpha = 0;
  bad.beta = 0;
  EXPECT_FALSE(DiluScheduler::Create(bad).ok());
}

TEST_F(SchedulerTest, JoinsAPopulatedStateAndRemovalsReopenGpus) {
  state_ = std::make_unique<ClusterState>(ClusterSpec::Uniform(1, NodeSpec{}));
  ASSERT_TRUE(
      state_->Add({InstanceId(1), FunctionId(1), GpuId(2), Bytes::GiB(5), {0.5, 0.5}}).ok());
  sched_ = *DiluScheduler::Create({});
  EXPECT_EQ(PlaceAndCommit(Demand(2, 2, 0.2, 0.2, 1)), std::vector<int>{2});
  RemoveInstance(1);
  RemoveInstance(2);
  EXPECT_EQ(PlaceAndCommit(Demand(3, 3, 0.2, 0.2, 1)), std::vector<int>{0});
}

TEST_F(SchedulerTest, HeterogeneousNewGpuPrefersTheSmallestThatFits) {
  ClusterSpec spec;
  NodeSpec big;
  big.name = "big";
  big.gpu.memory = Bytes::GiB(80);
  NodeSpec small;
  small.name = "small";
  spec.nodes = {big, small};  // GPUs 0-3: 80 GiB, 4-7: 40 GiB
  state_ = std::make_unique<ClusterState>(spec);
  sched_ = *DiluScheduler::Create({});
  // New 40 GiB GPU: 0.5 (1 - 0.2) + 0.5 (1 - 10/40) = 0.775 < 80 GiB: 0.4 + 0.5 (1 - 10/80).
  EXPECT_EQ(PlaceAndCommit(Demand(1, 1, 0.2, 0.2, 10)), std::vector<int>{4});
  EXPECT_EQ(PlaceAndCommit(Demand(2, 2, 0.2, 0.2, 50)), std::vector<int>{0});  // only 80 fits
}

}  // namespace
}  // namespace sluice::core
