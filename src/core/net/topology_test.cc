#include "core/net/topology.h"

#include "gtest/gtest.h"

namespace sluice::core::net {
namespace {

constexpr double kGbit = 1e9 / 8;

TEST(NetPresetTest, ClusterAMatchesTable1) {
  auto spec = NetPreset("blitzscale-a");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->nodes, 4);
  EXPECT_EQ(spec->gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(spec->nvlink_gbps, 1600);
  EXPECT_DOUBLE_EQ(spec->rdma_gbps, 100);
  EXPECT_DOUBLE_EQ(spec->host_gpu_gbps, 128);
  EXPECT_DOUBLE_EQ(spec->ssd_gbps_per_gpu, 10);
}

TEST(NetPresetTest, ClusterBHasNoNvlinkAndNodesOverride) {
  auto spec = NetPreset("blitzscale-b", 125);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->nodes, 125);
  EXPECT_EQ(spec->nvlink_gbps, 0);
  EXPECT_DOUBLE_EQ(spec->pcie_gpu_gpu_gbps, 256);
}

TEST(NetPresetTest, AppendixTypesHavePricesAndValidate) {
  for (const std::string& name : NetPresetNames()) {
    auto spec = NetPreset(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_TRUE(ValidateNetSpec(*spec).ok()) << name;
  }
  EXPECT_NEAR(NetPreset("p4d.24xlarge")->gpu_price_per_hour, 45.039 / 8, 1e-9);
  EXPECT_DOUBLE_EQ(NetPreset("a2-ultragpu-8g")->rdma_gbps, 12.5);
}

TEST(NetPresetTest, UnknownNameListsKnownPresets) {
  auto spec = NetPreset("blitzscale-z");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(spec.status().message().find("blitzscale-a"), std::string::npos);
}

TEST(ValidateNetSpecTest, NamesTheField) {
  ClusterNetSpec spec;
  spec.rdma_gbps = -1;
  absl::Status s = ValidateNetSpec(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rdma_gbps"), std::string::npos) << s;
  spec = ClusterNetSpec{};
  spec.nodes = 0;
  EXPECT_NE(ValidateNetSpec(spec).message().find("nodes"), std::string::npos);
  spec = ClusterNetSpec{};
  spec.gpus_per_nic = 0;
  EXPECT_NE(ValidateNetSpec(spec).message().find("gpus_per_nic"), std::string::npos);
  spec = ClusterNetSpec{};
  spec.nvlink_gbps = 0;
  spec.pcie_gpu_gpu_gbps = 0;
  EXPECT_NE(ValidateNetSpec(spec).message().find("pcie_gpu_gpu_gbps"), std::string::npos);
  EXPECT_FALSE(Topology::Build(spec).ok());
}

TEST(SetNetSpecFieldTest, SetsKnownFieldsAndNamesUnknownOnes) {
  ClusterNetSpec spec = *NetPreset("blitzscale-a");
  ASSERT_TRUE(SetNetSpecField(spec, "rdma_gbps", 200).ok());
  ASSERT_TRUE(SetNetSpecField(spec, "gpus_per_nic", 2).ok());
  ASSERT_TRUE(SetNetSpecField(spec, "host_memory_per_node_gib", 512).ok());
  EXPECT_DOUBLE_EQ(spec.rdma_gbps, 200);
  EXPECT_EQ(spec.gpus_per_nic, 2);
  EXPECT_EQ(spec.host_memory_per_node, common::Bytes::GiB(512));
  absl::Status unknown = SetNetSpecField(spec, "rdma_gpbs", 1);
  EXPECT_NE(unknown.message().find("'rdma_gpbs'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.message().find("rdma_gbps"), std::string::npos);
  absl::Status fraction = SetNetSpecField(spec, "nodes", 2.5);
  EXPECT_NE(fraction.message().find("nodes"), std::string::npos) << fraction;
  ASSERT_TRUE(SetNetSpecField(spec, "ssd_gbps_per_gpu", -3).ok());  // range: ValidateNetSpec
  EXPECT_NE(ValidateNetSpec(spec).message().find("ssd_gbps_per_gpu"), std::string::npos);
}

TEST(TopologyTest, LinkCountsAndCapacities) {
  ClusterNetSpec spec = *NetPreset("blitzscale-a");
  spec.gpus_per_nic = 2;
  auto topo = Topology::Build(spec);
  ASSERT_TRUE(topo.ok());
  EXPECT_EQ(topo->nics_per_node(), 4);
  EXPECT_EQ(topo->num_links(), 4 * (8 * 3 + 4 * 2));
  EXPECT_EQ(topo->Capacities().size(), static_cast<size_t>(topo->num_links()));
  const Link& nv = topo->link(topo->GpuPeerLink({1, 3}));
  EXPECT_EQ(nv.kind, LinkKind::kNvlink);
  EXPECT_EQ(nv.node, 1);
  EXPECT_EQ(nv.index, 3);
  EXPECT_DOUBLE_EQ(nv.bytes_per_s, 1600 * kGbit);
  EXPECT_EQ(topo->link(topo->NicTxLink(2, 1)).kind, LinkKind::kNicTx);
  EXPECT_EQ(topo->link(topo->NicRxLink(2, 1)).kind, LinkKind::kNicRx);
  EXPECT_EQ(topo->NicOf({0, 5}), 2);
  EXPECT_DOUBLE_EQ(topo->link(topo->SsdLink({3, 7})).bytes_per_s, 10 * kGbit);
}

TEST(TopologyTest, PathsFollowTheContract) {
  auto a = *Topology::Build(*NetPreset("blitzscale-a"));
  EXPECT_TRUE(a.GpuToGpu({0, 1}, {0, 1}).empty());
  Path intra = a.GpuToGpu({0, 1}, {0, 2});
  ASSERT_EQ(intra.size(), 2u);
  EXPECT_EQ(a.link(intra[0]).kind, LinkKind::kNvlink);
  EXPECT_DOUBLE_EQ(a.PathCapacity(intra), 1600 * kGbit);
  EXPECT_TRUE(a.SameNvlinkDomain({0, 1}, {0, 7}));
  EXPECT_FALSE(a.SameNvlinkDomain({0, 1}, {1, 1}));
  Path inter = a.GpuToGpu({0, 1}, {2, 3});
  EXPECT_EQ(inter, (Path{a.NicTxLink(0, 1), a.NicRxLink(2, 3)}));
  EXPECT_DOUBLE_EQ(a.PathCapacity(inter), 100 * kGbit);
  EXPECT_EQ(a.HostToGpu(1, {1, 4}), (Path{a.HostGpuLink({1, 4})}));
  EXPECT_EQ(a.HostToGpu(0, {1, 4}),
            (Path{a.NicTxLink(0, 0), a.NicRxLink(1, 4), a.HostGpuLink({1, 4})}));
  EXPECT_EQ(a.SsdToGpu({2, 2}), (Path{a.SsdLink({2, 2}), a.HostGpuLink({2, 2})}));
  EXPECT_DOUBLE_EQ(a.PathCapacity(a.SsdToGpu({2, 2})), 10 * kGbit);
  EXPECT_TRUE(std::isinf(a.PathCapacity({})));

  auto b = *Topology::Build(*NetPreset("blitzscale-b"));
  Path pcie = b.GpuToGpu({1, 0}, {1, 5});
  EXPECT_EQ(b.link(pcie[0]).kind, LinkKind::kGpuGpuPcie);
  EXPECT_DOUBLE_EQ(b.PathCapacity(pcie), 256 * kGbit);
  EXPECT_FALSE(b.SameNvlinkDomain({1, 0}, {1, 5}));
}

}  // namespace
}  // namespace sluice::core::net
