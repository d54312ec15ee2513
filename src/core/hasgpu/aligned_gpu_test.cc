// AlignedGpu: slot counting, the maximum expandable quota of a pod, the type limit, and a
// GPU rebuilt from ClusterState.
#include "core/hasgpu/aligned_gpu.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

TEST(AlignedGpuTest, SlotsAreCeilOfTimeSum) {
  EXPECT_EQ(SlotsFor(0), 0);
  EXPECT_EQ(SlotsFor(0.3 + 0.7), 1);
  EXPECT_EQ(SlotsFor(1.2), 2);
  EXPECT_EQ(SlotsFor(0.1 + 0.2 + 0.7), 1);
}

// Fig. 2's situation: two 0.5 pods time-share one 0.5 slot; the other half of the SMs is free.
TEST(AlignedGpuTest, PodsOfOneTypeShareSlotsInTime) {
  AlignedGpu g(2, Bytes::GiB(40));
  g.AddPod(0.5, 0.4, Bytes::GiB(4));
  g.AddPod(0.5, 0.5, Bytes::GiB(4));
  EXPECT_NEAR(g.held(), 0.45, 1e-12);
  EXPECT_NEAR(g.MaxNewQuota(0.5), 1.0, 1e-12);   // a second 0.5 slot is free: 1.1 of 2
  EXPECT_NEAR(g.MaxQuotaFor(0.5, 0.4), 1.0, 1e-12);
  EXPECT_NEAR(g.MaxNewQuota(0.3), 1.0, 1e-12);   // a new type in the free half
  EXPECT_NEAR(g.MaxNewQuota(0.6), 0.0, 1e-12);   // no 0.6 block left
  g.AddPod(0.3, 1.0, Bytes::GiB(4));             // now 0.5 + 0.3 of SMs are slotted
  EXPECT_NEAR(g.MaxNewQuota(0.5), 0.1, 1e-9);    // only the first slot's spare time
  EXPECT_NEAR(g.MaxQuotaFor(0.5, 0.4), 0.5, 1e-9);
  EXPECT_NEAR(g.MaxNewQuota(0.2), 0.0, 1e-12);   // third type: over the limit of 2
  EXPECT_NEAR(g.MaxNewQuota(0.3), 0.0, 1e-12);   // its slot is full, 0.2 free < 0.3
  EXPECT_FALSE(g.Fits(0.3, 0.5, Bytes(0)));
  EXPECT_TRUE(g.Fits(0.5, 0.1, Bytes(0)));
  EXPECT_TRUE(g.Valid());
  EXPECT_FALSE(g.Fits(0.5, 0.05, Bytes::GiB(40)));  // memory
}

TEST(AlignedGpuTest, RemoveAndChangeKeepTheBook) {
  AlignedGpu g(1, Bytes::GiB(40));
  g.AddPod(0.5, 0.5, Bytes::GiB(10));
  g.ChangeQuota(0.5, 0.5, 0.9);
  EXPECT_NEAR(g.held(), 0.45, 1e-12);
  EXPECT_EQ(g.MaxNewQuota(0.25), 0);  // type limit 1
  g.RemovePod(0.5, 0.9, Bytes::GiB(10));
  EXPECT_TRUE(g.types().empty());
  EXPECT_EQ(g.memory_free(), Bytes::GiB(40));
  EXPECT_EQ(g.MaxNewQuota(0.25), 1);
}

TEST(AlignedGpuTest, BuildsFromClusterState) {
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  ASSERT_TRUE(c.Add({InstanceId(1), FunctionId(1), GpuId(0), Bytes::GiB(8), {0.5, 0.5, 0.7}}).ok());
  ASSERT_TRUE(c.Add({InstanceId(2), FunctionId(2), GpuId(0), Bytes::GiB(8), {0.5, 0.5, 0.6}}).ok());
  AlignedGpu g(c.gpu(GpuId(0)), 2);
  EXPECT_EQ(g.memory_free(), Bytes::GiB(24));
  EXPECT_NEAR(g.held(), c.gpu(GpuId(0)).sum_held, 1e-12);
  EXPECT_NEAR(g.MaxNewQuota(0.5), 0.7, 1e-9);  // 1.3 of 2 slots used
  EXPECT_EQ(g.MaxNewQuota(0.1), 0);            // both halves slotted
}

}  // namespace
}  // namespace sluice::core
