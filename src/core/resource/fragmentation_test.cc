#include "core/resource/fragmentation.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

Allocation Alloc(int inst, int gpu, double gib, double req) {
  return Allocation{InstanceId(inst), FunctionId(1), GpuId(gpu), Bytes::GiB(gib), {req, req}};
}

// Two nodes x 4 GPUs x 40 GiB. Node 0: GPU0 holds requests 0.3 (10 GiB) + 0.2 (6 GiB);
// GPU1 holds 0.7 (30 GiB) + 0.5 (5 GiB), oversubscribed; GPU2, GPU3 idle. Node 1 idle.
ClusterState DiluExample() {
  ClusterState c(ClusterSpec::Uniform(2, NodeSpec{}));
  EXPECT_TRUE(c.Add(Alloc(1, 0, 10, 0.3)).ok());
  EXPECT_TRUE(c.Add(Alloc(2, 0, 6, 0.2)).ok());
  EXPECT_TRUE(c.Add(Alloc(3, 1, 30, 0.7)).ok());
  EXPECT_TRUE(c.Add(Alloc(4, 1, 5, 0.5)).ok());
  return c;
}

TEST(DiluFragmentationTest, HandWorkedExample) {
  ClusterState c = DiluExample();
  // GPU0: sm = 1 - min(1, 0.3 + 0.2) = 0.5; memory = (40 - 16) / 40 = 0.6.
  GpuFragment f0 = DiluFragment(c.gpu(GpuId(0)));
  EXPECT_NEAR(f0.sm, 0.5, 1e-12);
  EXPECT_NEAR(f0.memory, 0.6, 1e-12);
  // GPU1: sm = 1 - min(1, 1.2) = 0; memory = (40 - 35) / 40 = 0.125.
  GpuFragment f1 = DiluFragment(c.gpu(GpuId(1)));
  EXPECT_NEAR(f1.sm, 0.0, 1e-12);
  EXPECT_NEAR(f1.memory, 0.125, 1e-12);
  // Idle GPUs are not fragments.
  GpuFragment f2 = DiluFragment(c.gpu(GpuId(2)));
  EXPECT_EQ(f2.sm, 0.0);
  EXPECT_EQ(f2.memory, 0.0);
  // Cluster: 2 active GPUs; sm_sum = 0.5 + 0 = 0.5 -> mean 0.25;
  // memory_sum = 0.6 + 0.125 = 0.725 -> mean 0.3625; free memory 24 + 5 = 29 GiB.
  DiluFragmentation d = MeasureDilu(c);
  EXPECT_EQ(d.active_gpus, 2);
  EXPECT_NEAR(d.sm_sum, 0.5, 1e-12);
  EXPECT_NEAR(d.memory_sum, 0.725, 1e-12);
  EXPECT_NEAR(d.sm(), 0.25, 1e-12);
  EXPECT_NEAR(d.memory(), 0.3625, 1e-12);
  EXPECT_EQ(d.memory_free, Bytes::GiB(29));
}

TEST(DiluFragmentationTest, EmptyClusterHasNoFragments) {
  ClusterState c(ClusterSpec::Uniform(3, NodeSpec{}));
  DiluFragmentation d = MeasureDilu(c);
  EXPECT_EQ(d.active_gpus, 0);
  EXPECT_EQ(d.sm(), 0.0);
  EXPECT_EQ(d.memory(), 0.0);
}

// Node 0 of FgdExample: GPU0 request 0.5 (10 GiB), GPU1 request 0.8 (4 GiB), GPU2/3 idle.
// R = [0.5, 0.2, 1, 1], free memory = [30, 36, 40, 40] GiB. Node 1 idle.
ClusterState FgdExample() {
  ClusterState c(ClusterSpec::Uniform(2, NodeSpec{}));
  EXPECT_TRUE(c.Add(Alloc(1, 0, 10, 0.5)).ok());
  EXPECT_TRUE(c.Add(Alloc(2, 1, 4, 0.8)).ok());
  return c;
}

TEST(FgdFragmentationTest, HandWorkedNodeExample) {
  ClusterState c = FgdExample();
  // p = weight / 4: A 0.5, B 0.25, C 0.25.
  TargetWorkload w{{{1, 0.3, Bytes::GiB(5), 2},     // A
                    {2, 1.0, Bytes::GiB(20), 1},    // B
                    {1, 0.5, Bytes::GiB(35), 1}}};  // C
  ASSERT_TRUE(ValidateTargetWorkload(w).ok());
  // A: GPU1 unusable (0.2 < 0.3), the rest usable, hostable -> F = 0.2.
  // B: usable only GPU2, GPU3 (R = 1); 2 >= 2 hostable -> F = 0.5 + 0.2 = 0.7.
  // C: GPU0 has share 0.5 but only 30 < 35 GiB; GPU1 too small; hostable on GPU2/3 -> F = 0.7.
  // F_0 = 0.5 * 0.2 + 0.25 * 0.7 + 0.25 * 0.7 = 0.45.
  EXPECT_NEAR(FgdNodeFragmentation(c, NodeId(0), w), 0.45, 1e-12);
  // Node 1 is idle and every class fits: 0.
  EXPECT_NEAR(FgdNodeFragmentation(c, NodeId(1), w), 0.0, 1e-12);
  FgdFragmentation f = MeasureFgd(c, w);
  EXPECT_NEAR(f.fragment_sum, 0.45, 1e-12);
  EXPECT_NEAR(f.unallocated_sum, 0.5 + 0.2 + 1 + 1 + 4, 1e-12);
  EXPECT_NEAR(f.ratio(), 0.45 / 6.7, 1e-12);
}

TEST(FgdFragmentationTest, UnhostableAndCpuOnlyTasksStrandEverything) {
  ClusterState c = FgdExample();
  TargetWorkload w{{{4, 1.0, Bytes(0), 1},    // E: four whole GPUs
                    {0, 1.0, Bytes(0), 1}}};  // F: CPU-only
  // Node 0: E sees only 2 free GPUs -> unhostable -> F = all free = 2.7; F (cpu) -> 2.7.
  //   F_0 = 0.5 * 2.7 + 0.5 * 2.7 = 2.7.
  // Node 1 (idle): E hostable, nothing unusable -> 0; F -> 4. F_1 = 0.5 * 0 + 0.5 * 4 = 2.
  EXPECT_NEAR(FgdNodeFragmentation(c, NodeId(0), w), 2.7, 1e-12);
  EXPECT_NEAR(FgdNodeFragmentation(c, NodeId(1), w), 2.0, 1e-12);
  FgdFragmentation f = MeasureFgd(c, w);
  EXPECT_NEAR(f.fragment_sum, 4.7, 1e-12);
  EXPECT_NEAR(f.ratio(), 4.7 / 6.7, 1e-12);
}

TEST(FgdFragmentationTest, RejectsBadWorkloads) {
  EXPECT_FALSE(ValidateTargetWorkload({}).ok());
  EXPECT_FALSE(ValidateTargetWorkload({{{1, 0.0, Bytes(0), 1}}}).ok());
  EXPECT_FALSE(ValidateTargetWorkload({{{1, 1.5, Bytes(0), 1}}}).ok());
  EXPECT_FALSE(ValidateTargetWorkload({{{-1, 0.5, Bytes(0), 1}}}).ok());
  EXPECT_FALSE(ValidateTargetWorkload({{{1, 0.5, Bytes(0), -1}}}).ok());
  EXPECT_FALSE(ValidateTargetWorkload({{{1, 0.5, Bytes(0), 0}}}).ok());
}

// Time quotas: a GPU holding s x q is partly free in time. GPU0: (s 0.5, q 0.4) + (s 0.5,
// q 0.6) -> G = 0.5, free 0.5 of SM-time (a spatial count would call it full). GPU1: (s 1, q 0.5).
TEST(TimeQuotaFragmentationTest, FreeShareIsFreeSmTime) {
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  auto add = [&](int inst, int gpu, double s, double q) {
    ASSERT_TRUE(c.Add({InstanceId(inst), FunctionId(1), GpuId(gpu), Bytes::GiB(4), {s, s, q}}).ok());
  };
  add(1, 0, 0.5, 0.4);
  add(2, 0, 0.5, 0.6);
  add(3, 1, 1.0, 0.5);
  EXPECT_NEAR(GuaranteedSmTime(c.gpu(GpuId(0))), 0.5, 1e-12);
  EXPECT_NEAR(DiluFragment(c.gpu(GpuId(0))).sm, 0.5, 1e-12);
  EXPECT_NEAR(DiluFragment(c.gpu(GpuId(1))).sm, 0.5, 1e-12);
  EXPECT_NEAR(MeasureDilu(c).sm_sum, 1.0, 1e-12);
  // A task of SM-time 0.6 x 0.5 = 0.3 fits both active GPUs; one of 0.6 x 1 fits neither
  // (their 0.5 + 0.5 is stranded), nor do the two idle GPUs strand anything for it.
  TargetWorkload half{{{1, 0.6, Bytes::GiB(1), 1, 0.5}}};
  TargetWorkload full{{{1, 0.6, Bytes::GiB(1), 1, 1.0}}};
  EXPECT_NEAR(FgdNodeFragmentation(c, NodeId(0), half), 0.0, 1e-12);
  EXPECT_NEAR(FgdNodeFragmentation(c, NodeId(0), full), 1.0, 1e-12);
  EXPECT_NEAR(MeasureFgd(c, full).unallocated_sum, 3.0, 1e-12);
  EXPECT_FALSE(ValidateTargetWorkload({{{1, 0.5, Bytes(0), 1, 0.0}}}).ok());
  EXPECT_FALSE(ValidateTargetWorkload({{{1, 0.5, Bytes(0), 1, 1.5}}}).ok());
}

// The cluster-wide FGD (with its idle-node cache) equals the sum of per-node values, and Dilu's
// sums equal a brute-force scan, on random clusters.
TEST(FragmentationPropertyTest, ClusterMeasuresMatchBruteForce) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed=" << seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> nodes(1, 6), gpus(1, 8), pct(1, 100);
    ClusterSpec spec;
    for (int n = nodes(rng); n > 0; --n) {
      NodeSpec ns;
      ns.gpu_count = gpus(rng);
      ns.gpu.memory = Bytes::GiB(pct(rng) % 2 ? 40 : 80);
      spec.nodes.push_back(ns);
    }
    ClusterState c(spec);
    for (int i = 0; i < 40; ++i) {
      const int g = static_cast<int>(rng() % c.gpu_count());
      const double q = pct(rng) / 100.0;
      (void)c.Add(Alloc(i, g, pct(rng) / 4.0, q));  // some fail on memory: fine
    }
    TargetWorkload w{{{1, 0.25, Bytes::GiB(8), 3},
                      {2, 1.0, Bytes::GiB(30), 1},
                      {1, 0.6, Bytes::GiB(1), 2},
                      {8, 1.0, Bytes(0), 1}}};
    double per_node = 0;
    for (int n = 0; n < c.node_count(); ++n)
      per_node += FgdNodeFragmentation(c, NodeId(n), w);
    FgdFragmentation f = MeasureFgd(c, w);
    EXPECT_NEAR(f.fragment_sum, per_node, 1e-9);
    EXPECT_LE(f.fragment_sum, f.unallocated_sum + 1e-9);
    double sm = 0, mem = 0;
    int active = 0;
    for (const GpuState& g : c.gpus()) {
      if (g.allocations.empty())
        continue;
      ++active;
      sm += 1.0 - std::min(1.0, g.sum_request);
      mem += g.memory_free().gib() / g.spec.memory.gib();
    }
    DiluFragmentation d = MeasureDilu(c);
    EXPECT_EQ(d.active_gpus, active);
    EXPECT_NEAR(d.sm_sum, sm, 1e-9);
    EXPECT_NEAR(d.memory_sum, mem, 1e-9);
  }
}

}  // namespace
}  // namespace sluice::core
