#include "core/blitz/multicast_plan.h"

#include "gtest/gtest.h"

namespace sluice::core::blitz {
namespace {

using net::NetPreset;
using net::Topology;

Topology Cluster(const char* preset, int nodes) {
  return *Topology::Build(*NetPreset(preset, nodes));
}

Endpoint Gpu(int node, std::vector<int> gpus, bool outcast = false) {
  Endpoint e;
  e.node = node;
  e.gpus = std::move(gpus);
  e.outcast_busy = outcast;
  return e;
}

Endpoint Host(int node) {
  Endpoint e;
  e.kind = Endpoint::Kind::kHost;
  e.node = node;
  return e;
}

std::vector<int> CoveredOnce(const MulticastPlan& plan, size_t targets) {
  std::vector<int> seen(targets, 0);
  for (const Chain& c : plan.chains) {
    EXPECT_EQ(c.targets.size(), c.hop_cap_fraction.size());
    for (int t : c.targets) {
      ++seen[t];
    }
  }
  for (const NvlinkBroadcast& b : plan.broadcasts) {
    for (int t : b.to) {
      ++seen[t];
    }
  }
  return seen;
}

TEST(MulticastPlanTest, NvlinkGroupsCollapseToOneReceiverPerNode) {
  const Topology topo = Cluster("blitzscale-a", 4);
  std::vector<Endpoint> targets;
  for (int node : {1, 2}) {
    for (int g = 0; g < 8; ++g) {
      targets.push_back(Gpu(node, {g}));
    }
  }
  auto plan = PlanMulticast({Host(0)}, targets, topo);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(CoveredOnce(*plan, targets.size()), std::vector<int>(16, 1));
  ASSERT_EQ(plan->broadcasts.size(), 2u);
  EXPECT_EQ(plan->broadcasts[0].to.size(), 7u);
  ASSERT_EQ(plan->chains.size(), 1u);  // one source: one chain through the two receivers
  EXPECT_EQ(plan->chains[0].targets.size(), 2u);

  PlanOptions no_grouping;
  no_grouping.nvlink_grouping = false;
  auto flat = PlanMulticast({Host(0)}, targets, topo, no_grouping);
  ASSERT_TRUE(flat.ok());
  EXPECT_TRUE(flat->broadcasts.empty());
  EXPECT_EQ(flat->chains[0].targets.size(), 16u);
}

TEST(MulticastPlanTest, ClusterBHasNoNvlinkGroups) {
  const Topology topo = Cluster("blitzscale-b", 2);
  auto plan = PlanMulticast({Host(0)}, {Gpu(1, {0}), Gpu(1, {1})}, topo);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->broadcasts.empty());
  EXPECT_EQ(CoveredOnce(*plan, 2), std::vector<int>(2, 1));
}

TEST(MulticastPlanTest, PruningAvoidsOutcastBusySources) {
  const Topology topo = Cluster("blitzscale-b", 4);
  const std::vector<Endpoint> sources = {Gpu(0, {0}, /*outcast=*/true), Gpu(1, {0})};
  const std::vector<Endpoint> targets = {Gpu(2, {0}), Gpu(3, {0}), Gpu(2, {1})};
  auto plan = PlanMulticast(sources, targets, topo);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->pruned_sources, 1);
  for (const Chain& c : plan->chains) {
    EXPECT_EQ(c.source, 1);
  }
  PlanOptions naive;
  naive.prune_interference = false;
  auto both = PlanMulticast(sources, targets, topo, naive);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->pruned_sources, 0);
  EXPECT_EQ(both->chains.size(), 2u);  // the busy prefill source forwards too
}

TEST(MulticastPlanTest, AllSourcesBusyFallsBackWithCappedHops) {
  const Topology topo = Cluster("blitzscale-b", 2);
  auto plan = PlanMulticast({Gpu(0, {0}, true)}, {Gpu(1, {0})}, topo);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->interference_fallback);
  EXPECT_EQ(plan->pruned_sources, 0);
  EXPECT_DOUBLE_EQ(plan->chains[0].hop_cap_fraction[0], 0.5);
}

TEST(MulticastPlanTest, PrunedSourceStillFeedsItsNvlinkDomain) {
  const Topology topo = Cluster("blitzscale-a", 3);
  const std::vector<Endpoint> sources = {Gpu(0, {0}, true), Host(1)};
  const std::vector<Endpoint> targets = {Gpu(0, {1}), Gpu(0, {2}), Gpu(2, {0})};
  auto plan = PlanMulticast(sources, targets, topo);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(CoveredOnce(*plan, 3), std::vector<int>(3, 1));
  ASSERT_EQ(plan->chains.size(), 2u);
  EXPECT_EQ(plan->chains[0].source, 0);
  EXPECT_EQ(plan->chains[0].targets, std::vector<int>{0});  // NVLink only
  EXPECT_EQ(plan->chains[1].source, 1);
  EXPECT_EQ(plan->chains[1].targets, std::vector<int>{2});
}

TEST(MulticastPlanTest, ChainOrderFollowsLinkSpeed) {
  // Cluster B: from GPU 0 of node 0, GPU 1 of node 0 is reachable over 256 Gbps PCIe, the
  // others over 100 Gbps RDMA.
  const Topology topo = Cluster("blitzscale-b", 2);
  const std::vector<Endpoint> targets = {Gpu(1, {0}), Gpu(0, {1}), Gpu(1, {1})};
  auto plan = PlanMulticast({Gpu(0, {0})}, targets, topo);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->chains.size(), 1u);
  EXPECT_EQ(plan->chains[0].targets, (std::vector<int>{1, 0, 2}));
  PlanOptions unordered;
  unordered.order_by_link_speed = false;
  auto plain = PlanMulticast({Gpu(0, {0})}, targets, topo, unordered);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->chains[0].targets, (std::vector<int>{0, 1, 2}));
}

TEST(MulticastPlanTest, MultiChainBalancesAndSingleChainOption) {
  const Topology topo = Cluster("blitzscale-b", 16);
  std::vector<Endpoint> sources = {Gpu(0, {0}), Gpu(1, {0}), Gpu(2, {0}), Host(3)};
  std::vector<Endpoint> targets;
  for (int n = 4; n < 14; ++n) {
    targets.push_back(Gpu(n, {0}));
  }
  auto plan = PlanMulticast(sources, targets, topo);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->chains.size(), 4u);
  for (const Chain& c : plan->chains) {
    EXPECT_GE(c.targets.size(), 1u);
    EXPECT_LE(c.targets.size(), 3u);  // ceil(10 / 4)
  }
  PlanOptions single;
  single.multi_chain = false;
  auto one = PlanMulticast(sources, targets, topo, single);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->chains.size(), 1u);
  EXPECT_EQ(one->chains[0].targets.size(), 10u);
}

TEST(MulticastPlanTest, OutcastBusyTargetGoesToTheTail) {
  const Topology topo = Cluster("blitzscale-b", 4);
  std::vector<Endpoint> targets = {Gpu(1, {0}, /*outcast=*/true), Gpu(2, {0}), Gpu(3, {0})};
  auto plan = PlanMulticast({Host(0)}, targets, topo);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->chains[0].targets.back(), 0);
}

TEST(MulticastPlanTest, HopBandwidthSplitsSharedLinks) {
  const Topology topo = Cluster("blitzscale-a", 2);
  const double nic = 100e9 / 8;
  const Endpoint tp4 = Gpu(1, {0, 1, 2, 3});
  EXPECT_DOUBLE_EQ(HopBandwidth(Gpu(0, {0, 1, 2, 3}), tp4, topo), 4 * nic);  // 4 NICs each
  EXPECT_DOUBLE_EQ(HopBandwidth(Host(0), tp4, topo), nic);  // one host NIC shared by 4 shards
  Endpoint ssd;
  ssd.kind = Endpoint::Kind::kSsd;
  ssd.node = 0;
  EXPECT_EQ(HopBandwidth(ssd, tp4, topo), 0);
  ssd.node = 1;
  EXPECT_DOUBLE_EQ(HopBandwidth(ssd, tp4, topo), 4 * 10e9 / 8);
  const std::vector<net::Path> shards = ShardPaths(Gpu(0, {4, 5}), Gpu(1, {6, 7}), topo);
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[1], topo.GpuToGpu({0, 5}, {1, 7}));
  EXPECT_TRUE(ShardPaths(Host(1), Gpu(1, {0}), topo)[0] == topo.HostToGpu(1, {1, 0}));
}

TEST(MulticastPlanTest, BadInputNamesTheField) {
  const Topology topo = Cluster("blitzscale-a", 2);
  EXPECT_EQ(PlanMulticast({}, {Gpu(0, {0})}, topo).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto bad_gpu = PlanMulticast({Host(0)}, {Gpu(1, {9})}, topo);
  EXPECT_NE(bad_gpu.status().message().find("targets[0].gpus[0]"), std::string::npos)
      << bad_gpu.status();
  auto bad_node = PlanMulticast({Host(5)}, {Gpu(1, {0})}, topo);
  EXPECT_NE(bad_node.status().message().find("sources[0].node"), std::string::npos);
  auto host_target = PlanMulticast({Host(0)}, {Host(1)}, topo);
  EXPECT_NE(host_target.status().message().find("targets[0].kind"), std::string::npos);
  Endpoint ssd;
  ssd.kind = Endpoint::Kind::kSsd;
  auto unreachable = PlanMulticast({ssd}, {Gpu(1, {0})}, topo);
  EXPECT_NE(unreachable.status().message().find("no usable source"), std::string::npos);
  auto overlap = PlanMulticast({Gpu(0, {0})}, {Gpu(1, {0, 1}), Gpu(1, {1})}, topo);
  EXPECT_NE(overlap.status().message().find("targets[1].gpus[0] is also a GPU of targets[0]"),
            std::string::npos)
      << overlap.status();
  auto on_source = PlanMulticast({Gpu(0, {2})}, {Gpu(0, {2})}, topo);
  EXPECT_NE(on_source.status().message().find("sources[0]"), std::string::npos);
  auto empty = PlanMulticast({Host(0)}, {}, topo);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->chains.empty());
}

}  // namespace
}  // namespace sluice::core::blitz
