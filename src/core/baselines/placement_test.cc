// Hand-worked placement cases for ExclusivePlacement and StaticSharePlacement.
#include <set>

#include "gtest/gtest.h"

#include "core/baselines/exclusive_placement.h"
#include "core/baselines/function_tracking_placement.h"
#include "core/baselines/static_share_placement.h"
#include "core/baselines/testing/commit.h"

namespace sluice::core {
namespace {

InstanceDemand Demand(int inst, double share, double gib, int gpus = 1, bool same_node = false) {
  InstanceDemand d;
  d.function = FunctionId(1);
  d.instance = InstanceId(inst);
  d.gpus = gpus;
  d.memory_per_gpu = Bytes::GiB(gib);
  d.quota = {share, share};
  d.same_node = same_node;
  return d;
}

ClusterState Nodes(int n) {
  return ClusterState(ClusterSpec::Uniform(n, NodeSpec{}));
}

std::vector<GpuId> Ids(std::initializer_list<int> v) {
  std::vector<GpuId> out;
  for (int i : v)
    out.push_back(GpuId(i));
  return out;
}

TEST(ExclusivePlacementTest, NeverCoLocatesAndExhausts) {
  ClusterState c = Nodes(2);
  ExclusivePlacement p;
  std::set<GpuId> used;
  for (int i = 0; i < 8; ++i) {
    auto g = PlaceAndCommit(p, c, Demand(i, 0.1, 1));
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(used.insert((*g)[0]).second) << "GPU reused";
  }
  EXPECT_EQ(p.Place(Demand(9, 0.1, 1), c).status().code(), absl::StatusCode::kResourceExhausted);
  RemoveAndNotify(p, c, InstanceId(5));
  auto g = PlaceAndCommit(p, c, Demand(10, 0.1, 1));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, Ids({5}));
  EXPECT_TRUE(p.CheckIndex(c).ok());
}

TEST(ExclusivePlacementTest, NodeOrderPacksOrSpreads) {
  ClusterState c = Nodes(2);
  ExclusivePlacement pack;  // default most_allocated
  ASSERT_EQ(*PlaceAndCommit(pack, c, Demand(1, 1, 1)), Ids({0}));
  // Node 0 has 3 empty GPUs, node 1 has 4: packing stays on node 0.
  EXPECT_EQ(*PlaceAndCommit(pack, c, Demand(2, 1, 1)), Ids({1}));

  ClusterState s = Nodes(2);
  ExclusivePlacement spread(NodeOrder::kLeastAllocated);
  ASSERT_EQ(*PlaceAndCommit(spread, s, Demand(1, 1, 1)), Ids({0}));
  EXPECT_EQ(*PlaceAndCommit(spread, s, Demand(2, 1, 1)), Ids({4}));
  EXPECT_EQ(*PlaceAndCommit(spread, s, Demand(3, 1, 1)), Ids({1}));
}

TEST(ExclusivePlacementTest, MultiGpuSameNodeAndSpread) {
  ClusterState c = Nodes(2);
  ExclusivePlacement p;
  ASSERT_TRUE(PlaceAndCommit(p, c, Demand(1, 1, 1)).ok());  // GPU 0
  // Four on one node: only node 1 qualifies.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(2, 1, 1, 4, true)), Ids({4, 5, 6, 7}));
  // Three on one node: node 0's GPUs 1..3.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(3, 1, 1, 3, true)), Ids({1, 2, 3}));
  EXPECT_EQ(p.Place(Demand(4, 1, 1), c).status().code(), absl::StatusCode::kResourceExhausted);

  ClusterState s = Nodes(2);
  ExclusivePlacement q;
  ASSERT_TRUE(PlaceAndCommit(q, s, Demand(1, 1, 1)).ok());  // GPU 0 (node 0: 3 left)
  ASSERT_TRUE(PlaceAndCommit(q, s, Demand(2, 1, 1, 1)).ok());
  ASSERT_TRUE(PlaceAndCommit(q, s, Demand(3, 1, 1, 2, true)).ok());  // node 0 full now
  // Node 1 has 4 empty GPUs: 5 on one node is impossible, 5 spread too (only 4 left).
  EXPECT_FALSE(q.Place(Demand(4, 1, 1, 5, true), s).ok());
  EXPECT_FALSE(q.Place(Demand(4, 1, 1, 5, false), s).ok());
  RemoveAndNotify(q, s, InstanceId(1));  // node 0 has GPU 0 back
  EXPECT_FALSE(q.Place(Demand(4, 1, 1, 5, true), s).ok());
  EXPECT_EQ(*q.Place(Demand(4, 1, 1, 5, false), s), Ids({0, 4, 5, 6, 7}));
  EXPECT_TRUE(q.CheckIndex(s).ok());
}

TEST(ExclusivePlacementTest, MemoryAndHeterogeneousNodes) {
  ClusterSpec spec = ClusterSpec::Uniform(1, NodeSpec{});
  NodeSpec big;
  big.gpu_count = 2;
  big.gpu.memory = Bytes::GiB(80);
  spec.nodes.push_back(big);
  ClusterState c(spec);
  ExclusivePlacement p;
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(1, 1, 50)), Ids({4}));
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(2, 1, 50)), Ids({5}));
  EXPECT_EQ(p.Place(Demand(3, 1, 50), c).status().code(), absl::StatusCode::kResourceExhausted);
  // Node 1 is full; a small model goes to node 0.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(4, 1, 10)), Ids({0}));
  EXPECT_EQ(p.Place(Demand(5, 1, 1, 0), c).status().code(), absl::StatusCode::kInvalidArgument);
}

StaticSharePlacement Mps(ShareBasis basis = ShareBasis::kLimit) {
  return StaticSharePlacement({"mps", basis, NodeOrder::kMostAllocated});
}

TEST(StaticSharePlacementTest, BestFitPicksFullestGpuThatFits) {
  ClusterState c = Nodes(1);
  StaticSharePlacement p = Mps();
  // Prepare: GPU0 used 0.6, GPU1 used 0.3 (placed directly, then reported).
  for (auto [inst, gpu, q] : {std::tuple{1, 0, 0.6}, {2, 1, 0.3}}) {
    Allocation a{InstanceId(inst), FunctionId(1), GpuId(gpu), Bytes::GiB(1), {q, q}};
    ASSERT_TRUE(c.Add(a).ok());
    p.OnAdded(a, c);
  }
  // q = 0.3: GPU0 has 0.4 free, GPU1 0.7 -> GPU0 (fullest that fits).
  EXPECT_EQ(*p.Place(Demand(3, 0.3, 1), c), Ids({0}));
  // q = 0.5: only GPU1 fits.
  EXPECT_EQ(*p.Place(Demand(3, 0.5, 1), c), Ids({1}));
  // q = 0.8: neither fits -> an empty GPU (GPU2, lowest on the only node).
  EXPECT_EQ(*p.Place(Demand(3, 0.8, 1), c), Ids({2}));
  // q = 0.4 fits GPU0 exactly (0.6 + 0.4 = 1).
  EXPECT_EQ(*p.Place(Demand(3, 0.4, 1), c), Ids({0}));
}

TEST(StaticSharePlacementTest, NeverExceedsShareOrMemory) {
  ClusterState c = Nodes(1);
  StaticSharePlacement p = Mps();
  // Three 0.3 instances share GPU0 (0.9); the fourth would make 1.2 -> GPU1.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(*PlaceAndCommit(p, c, Demand(i, 0.3, 1)), Ids({0}));
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(3, 0.3, 1)), Ids({1}));
  // 0.1 with 35 GiB: GPU0 (0.1 free, 37 GiB free) takes it and is now full in share.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(4, 0.1, 35)), Ids({0}));
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_limit, 1.0, 1e-12);
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(5, 0.1, 35)), Ids({1}));  // GPU1: 0.6 free, 4 GiB free
  // 0.1 with 5 GiB: GPU1 has share but not memory -> a new GPU.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(6, 0.1, 5)), Ids({2}));
  for (const GpuState& g : c.gpus()) {
    EXPECT_LE(g.sum_limit, 1.0 + 1e-9);
    EXPECT_LE(g.memory_used, g.spec.memory);
  }
  EXPECT_TRUE(p.CheckIndex(c).ok());
}

TEST(StaticSharePlacementTest, BasisChoosesRequestOrLimit) {
  ClusterState c = Nodes(1);
  StaticSharePlacement r = Mps(ShareBasis::kRequest);
  InstanceDemand d = Demand(1, 0.2, 1);
  d.quota = {0.2, 0.5};
  EXPECT_DOUBLE_EQ(r.ShareOf(d.quota), 0.2);
  EXPECT_DOUBLE_EQ(Mps().ShareOf(d.quota), 0.5);
}

TEST(StaticSharePlacementTest, MultiGpuSameNodeAndExhaustion) {
  ClusterState c = Nodes(2);
  StaticSharePlacement p = Mps();
  // Fill node 0's GPU0..2 to 0.5 each.
  for (int g = 0; g < 3; ++g) {
    Allocation a{InstanceId(100 + g), FunctionId(1), GpuId(g), Bytes::GiB(1), {0.5, 0.5}};
    ASSERT_TRUE(c.Add(a).ok());
    p.OnAdded(a, c);
  }
  // 4 x 0.5 on one node: node 0's three half-full GPUs plus its empty GPU3.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(1, 0.5, 1, 4, true)), Ids({0, 1, 2, 3}));
  // 4 x 0.6 on one node: node 0 has 0.5 left on GPU3 only -> node 1.
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(2, 0.6, 1, 4, true)), Ids({4, 5, 6, 7}));
  // 4 x 0.5: nothing anywhere.
  EXPECT_EQ(p.Place(Demand(3, 0.5, 1, 4, true), c).status().code(),
            absl::StatusCode::kResourceExhausted);
  // 3 x 0.4 spread: node 1's GPUs (0.4 free each) are tighter than GPU3 (0.5 free).
  EXPECT_EQ(*PlaceAndCommit(p, c, Demand(4, 0.4, 1, 3, false)), Ids({4, 5, 6}));
  EXPECT_TRUE(p.CheckIndex(c).ok());
}

TEST(StaticSharePlacementTest, RejectsBadShare) {
  ClusterState c = Nodes(1);
  StaticSharePlacement p = Mps();
  EXPECT_EQ(p.Place(Demand(1, 0.0, 1), c).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.Place(Demand(1, 1.5, 1), c).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FunctionTrackingPlacementTest, KnowsFunctionsOfCommittedInstancesOnly) {
  ClusterState c = Nodes(1);
  FunctionTrackingPlacement p(std::make_unique<StaticSharePlacement>(
      StaticSharePlacement::Options{"tracked", ShareBasis::kLimit, NodeOrder::kMostAllocated}));
  EXPECT_EQ(p.name(), "tracked");
  InstanceDemand d = Demand(4, 0.3, 2, /*gpus=*/2, /*same_node=*/true);
  d.function = FunctionId(9);
  EXPECT_TRUE(p.Place(d, c).ok());
  EXPECT_EQ(p.FunctionOf(InstanceId(4)), std::nullopt);  // placed, not committed
  ASSERT_TRUE(PlaceAndCommit(p, c, d).ok());
  EXPECT_EQ(p.FunctionOf(InstanceId(4)), FunctionId(9));
  ASSERT_TRUE(PlaceAndCommit(p, c, Demand(5, 0.3, 2)).ok());
  EXPECT_EQ(p.FunctionOf(InstanceId(5)), FunctionId(1));
  RemoveAndNotify(p, c, InstanceId(4));  // both GPUs released
  EXPECT_EQ(p.FunctionOf(InstanceId(4)), std::nullopt);
  EXPECT_EQ(p.FunctionOf(InstanceId(5)), FunctionId(1));
  // The inner policy's indices were kept in sync through the decorator.
  EXPECT_TRUE(dynamic_cast<StaticSharePlacement&>(p.inner()).CheckIndex(c).ok());
}

}  // namespace
}  // namespace sluice::core
