#include "core/resource/cluster.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

ClusterState TwoNodes() {
  return ClusterState(ClusterSpec::Uniform(2, NodeSpec{}));
}

Allocation Alloc(int inst, int gpu, double gib, double req, double lim) {
  return Allocation{InstanceId(inst), FunctionId(1), GpuId(gpu), Bytes::GiB(gib), {req, lim}};
}

TEST(ClusterStateTest, BuildsGpusPerNode) {
  ClusterState c = TwoNodes();
  EXPECT_EQ(c.gpu_count(), 8);
  EXPECT_EQ(c.gpus_of(NodeId(1)).size(), 4u);
  EXPECT_EQ(c.gpu(GpuId(5)).node, NodeId(1));
  EXPECT_TRUE(c.active_gpus().empty());
}

TEST(ClusterStateTest, AddAndRemoveKeepSumsAndActiveSet) {
  ClusterState c = TwoNodes();
  ASSERT_TRUE(c.Add(Alloc(1, 2, 10, 0.3, 0.6)).ok());
  ASSERT_TRUE(c.Add(Alloc(2, 2, 5, 0.2, 0.4)).ok());
  EXPECT_DOUBLE_EQ(c.gpu(GpuId(2)).sum_request, 0.5);
  EXPECT_DOUBLE_EQ(c.gpu(GpuId(2)).sum_limit, 1.0);
  EXPECT_EQ(c.gpu(GpuId(2)).memory_used, Bytes::GiB(15));
  EXPECT_EQ(c.active_gpus().size(), 1u);
  EXPECT_EQ(c.Remove(InstanceId(1)).size(), 1u);
  EXPECT_NEAR(c.gpu(GpuId(2)).sum_request, 0.2, 1e-12);
  EXPECT_EQ(c.Remove(InstanceId(2)).size(), 1u);
  EXPECT_TRUE(c.active_gpus().empty());
  EXPECT_TRUE(c.Remove(InstanceId(2)).empty());
}

TEST(ClusterStateTest, RejectsOverMemoryBadQuotaAndDuplicates) {
  ClusterState c = TwoNodes();
  EXPECT_EQ(c.Add(Alloc(1, 0, 41, 0.5, 0.5)).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(c.Add(Alloc(1, 0, 1, 0.6, 0.5)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Add(Alloc(1, 99, 1, 0.5, 0.5)).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(c.Add(Alloc(1, 0, 1, 0.5, 0.5)).ok());
  EXPECT_EQ(c.Add(Alloc(1, 0, 1, 0.5, 0.5)).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(c.gpu(GpuId(0)).memory_used == Bytes::GiB(1));
}

TEST(ClusterStateTest, MultiGpuInstanceReleasesAll) {
  ClusterState c = TwoNodes();
  for (int g = 0; g < 4; ++g) {
    ASSERT_TRUE(c.Add(Alloc(7, g, 20, 0.5, 1.0)).ok());
  }
  EXPECT_EQ(c.GpusOf(InstanceId(7)).size(), 4u);
  EXPECT_EQ(c.active_gpus().size(), 4u);
  EXPECT_EQ(c.Remove(InstanceId(7)).size(), 4u);
  EXPECT_TRUE(c.active_gpus().empty());
}

TEST(QuotaTest, ClassifiesDiluTable1) {
  EXPECT_EQ(ClassifyQuota({1, 1}), QuotaKind::kExclusive);
  EXPECT_EQ(ClassifyQuota({0.4, 0.4}), QuotaKind::kStatic);
  EXPECT_EQ(ClassifyQuota({0.3, 0.6}), QuotaKind::kElastic);
}

}  // namespace
}  // namespace sluice::core
