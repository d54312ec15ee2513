// Tests for QuartPlacement: key-stage replicas dispersed (unit and property test against random
// placement), cache preference, packing of other stages, no over-commit, ResourceExhausted.
#include "core/quart/quart_placement.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

ClusterState Cluster(int nodes, int gpus_per_node) {
  NodeSpec n;
  n.gpu_count = gpus_per_node;
  return ClusterState(ClusterSpec::Uniform(nodes, n));
}

std::unique_ptr<QuartPlacement> Make(int slack = 1) {
  auto p = QuartPlacement::Create({slack});
  EXPECT_TRUE(p.ok());
  return std::move(*p);
}

InstanceDemand Demand(int64_t instance, int stage, bool key, std::vector<NodeId> cached = {}) {
  InstanceDemand d;
  d.function = FunctionId(100 + stage);
  d.instance = InstanceId(instance);
  d.memory_per_gpu = Bytes::GiB(10);
  d.pipeline_stage = stage;
  d.key_stage = key;
  d.cached_on = std::move(cached);
  return d;
}

// Places and commits; returns the node or -1 on failure.
int PlaceAndCommit(QuartPlacement& p, const InstanceDemand& d, ClusterState& state) {
  absl::StatusOr<std::vector<GpuId>> gpus = p.Place(d, state);
  if (!gpus.ok())
    return -1;
  for (GpuId g : *gpus) {
    const Allocation a{d.instance, d.function, g, d.memory_per_gpu, SmQuota{1, 1}};
    EXPECT_TRUE(state.Add(a).ok());
    p.OnAdded(a, state);
  }
  return static_cast<int>(state.gpu(gpus->front()).node.value());
}

TEST(QuartPlacement, KeyReplicasSpreadOverNodes) {
  ClusterState state = Cluster(4, 4);
  auto p = Make();
  std::vector<int> per_node(4, 0);
  for (int i = 0; i < 8; ++i)
    ++per_node[PlaceAndCommit(*p, Demand(i, 3, true), state)];
  EXPECT_EQ(per_node, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_DOUBLE_EQ(p->KeyKl(), 0.0);
}

TEST(QuartPlacement, OtherStagesPack) {
  ClusterState state = Cluster(4, 4);
  auto p = Make();
  std::vector<int> nodes;
  for (int i = 0; i < 6; ++i)
    nodes.push_back(PlaceAndCommit(*p, Demand(i, 1, false), state));
  // Best fit: fill one node, then the next.
  EXPECT_EQ(nodes, (std::vector<int>{0, 0, 0, 0, 1, 1}));
}

TEST(QuartPlacement, KeyStagesAvoidNodesHoldingKeyInstances) {
  ClusterState state = Cluster(3, 4);
  auto p = Make(0);
  EXPECT_EQ(PlaceAndCommit(*p, Demand(1, 2, true), state), 0);
  // A non-key instance packs onto node 0 (best fit); the next key goes to an empty node.
  EXPECT_EQ(PlaceAndCommit(*p, Demand(2, 1, false), state), 0);
  const int next = PlaceAndCommit(*p, Demand(3, 2, true), state);
  EXPECT_NE(next, 0);
}

TEST(QuartPlacement, CachedNodeWinsWithinSlack) {
  ClusterState state = Cluster(3, 4);
  auto p = Make(1);
  ASSERT_EQ(PlaceAndCommit(*p, Demand(1, 2, true), state), 0);
  // Node 0 has one key instance, nodes 1-2 none: within slack 1, the cache on node 0 wins.
  EXPECT_EQ(PlaceAndCommit(*p, Demand(2, 2, true, {NodeId(0)}), state), 0);
  // Now node 0 has two, two more than the others: the cache no longer wins.
  EXPECT_NE(PlaceAndCommit(*p, Demand(3, 2, true, {NodeId(0)}), state), 0);
  // Non-key instances always prefer a caching node with room.
  EXPECT_EQ(PlaceAndCommit(*p, Demand(4, 5, false, {NodeId(2)}), state), 2);
}

TEST(QuartPlacement, SlackZeroMakesTheCacheATieBreaker) {
  ClusterState state = Cluster(3, 4);
  auto p = Make(0);
  ASSERT_EQ(PlaceAndCommit(*p, Demand(1, 2, true), state), 0);
  EXPECT_NE(PlaceAndCommit(*p, Demand(2, 2, true, {NodeId(0)}), state), 0);
  EXPECT_EQ(PlaceAndCommit(*p, Demand(3, 2, true, {NodeId(2)}), state), 2);
}

TEST(QuartPlacement, ResourceExhaustedWhenFullAndBadDemandRejected) {
  ClusterState state = Cluster(2, 2);
  auto p = Make();
  for (int i = 0; i < 4; ++i)
    ASSERT_GE(PlaceAndCommit(*p, Demand(i, i % 2, i % 2 == 0), state), 0);
  absl::StatusOr<std::vector<GpuId>> r = p->Place(Demand(9, 0, true), state);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  InstanceDemand too_big = Demand(10, 0, false);
  too_big.memory_per_gpu = Bytes::GiB(80);
  ClusterState empty = Cluster(2, 2);
  EXPECT_EQ(p->Place(too_big, empty).status().code(), absl::StatusCode::kResourceExhausted);
  InstanceDemand zero = Demand(11, 0, false);
  zero.gpus = 0;
  EXPECT_EQ(p->Place(zero, empty).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p->Place(zero, empty).status().message().find("gpus"), std::string::npos);
}

TEST(QuartPlacement, RemovalFreesGpusAndKeyCounts) {
  ClusterState state = Cluster(2, 2);
  auto p = Make();
  ASSERT_EQ(PlaceAndCommit(*p, Demand(1, 0, true), state), 0);
  EXPECT_EQ(p->key_instances()[0], 1);
  for (const Allocation& a : state.Remove(InstanceId(1)))
    p->OnRemoved(a, state);
  EXPECT_EQ(p->key_instances()[0], 0);
  for (int i = 0; i < 4; ++i)
    EXPECT_GE(PlaceAndCommit(*p, Demand(10 + i, 0, false), state), 0);
}

TEST(QuartPlacement, MultiGpuInstanceOnOneNodeAndSkipsSmallGpus) {
  ClusterSpec spec = ClusterSpec::Uniform(2, NodeSpec{});
  spec.nodes[0].gpu.memory = Bytes::GiB(8);  // node 0's GPUs are too small
  ClusterState state(spec);
  auto p = Make();
  InstanceDemand d = Demand(1, 0, true);
  d.gpus = 2;
  absl::StatusOr<std::vector<GpuId>> gpus = p->Place(d, state);
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ(state.gpu((*gpus)[0]).node, NodeId(1));
  EXPECT_EQ(state.gpu((*gpus)[1]).node, NodeId(1));
}

// Property: over seeded random clusters (uneven pre-occupied GPUs), key instances placed one at
// a time through the policy (after others' instances) end no farther from uniform than the same
// requests placed at random on nodes with room, and nothing is ever over-committed
// (ClusterState::Add would fail).
TEST(QuartPlacementProperty, DispersedNeverWorseThanRandomAndNeverOverCommits) {
  for (int seed = 0; seed < 200; ++seed) {
    std::mt19937 rng(seed);
    const int nodes = 2 + static_cast<int>(rng() % 10);
    const int per_node = 1 + static_cast<int>(rng() % 8);
    ClusterState state = Cluster(nodes, per_node);
    auto p = Make(0);
    std::vector<int> free(nodes, per_node), random_keys(nodes, 0);
    int64_t next = 1;
    // Pre-occupy some GPUs with other functions, reported to the policy.
    for (int j = 0; j < nodes; ++j) {
      const int busy = static_cast<int>(rng() % (per_node + 1));
      for (int k = 0; k < busy; ++k) {
        const Allocation a{InstanceId(next++), FunctionId(1), state.gpus_of(NodeId(j))[k],
                           Bytes::GiB(1), SmQuota{1, 1}};
        ASSERT_TRUE(state.Add(a).ok());
        p->OnAdded(a, state);
        --free[j];
      }
    }
    // Key instances of two stages (greedy water-filling is optimal for them; other stages'
    // packing is covered by the unit tests above).
    const int requests = static_cast<int>(rng() % (nodes * per_node + 3));
    for (int r = 0; r < requests; ++r) {
      const bool key = true;
      const int node = PlaceAndCommit(*p, Demand(next++, 4 + r % 2, key), state);
      // Random placement of the same request on the random cluster copy.
      int room = 0;
      for (int f : free)
        room += f > 0;
      if (room == 0) {
        EXPECT_EQ(node, -1) << "seed " << seed;
        continue;
      }
      ASSERT_GE(node, 0) << "seed " << seed;
      int j = static_cast<int>(rng() % nodes);
      while (free[j] == 0)
        j = (j + 1) % nodes;
      --free[j];
      random_keys[j] += key;
    }
    EXPECT_LE(p->KeyKl(), KlFromUniform(random_keys) + 1e-9) << "seed " << seed;
    for (const GpuState& g : state.gpus())
      EXPECT_LE(g.allocations.size(), 1u) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::core
