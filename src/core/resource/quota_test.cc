// HAS-GPU's spatio-temporal quota in ClusterState: time_quota validation, held() and sum_held,
// UpdateQuota (vertical scaling), and a property test that the per-GPU sums always equal the sums
// over the GPU's allocations after random Add / UpdateQuota / Remove sequences.
#include <random>

#include "gtest/gtest.h"

#include "core/resource/cluster.h"

namespace sluice::core {
namespace {

Allocation Alloc(int inst, int gpu, double gib, SmQuota q) {
  return Allocation{InstanceId(inst), FunctionId(1), GpuId(gpu), Bytes::GiB(gib), q};
}

TEST(SpatioTemporalQuotaTest, ValidatesTimeQuota) {
  EXPECT_TRUE(ValidateQuota({0.5, 0.5, 1.0}).ok());
  EXPECT_TRUE(ValidateQuota({0.5, 0.5, 1e-6}).ok());
  for (double q : {0.0, -0.1, 1.01, std::nan("")}) {
    absl::Status s = ValidateQuota({0.5, 0.5, q});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << q;
    EXPECT_NE(s.message().find("time_quota"), std::string::npos) << s;
  }
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  EXPECT_EQ(c.Add(Alloc(1, 0, 1, {0.5, 0.5, 0})).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(c.gpu(GpuId(0)).active());
}

TEST(SpatioTemporalQuotaTest, HeldIsLimitTimesTimeQuota) {
  EXPECT_DOUBLE_EQ((SmQuota{0.3, 0.5, 0.4}).held(), 0.2);
  EXPECT_DOUBLE_EQ(SmQuota{}.held(), 1.0);
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  ASSERT_TRUE(c.Add(Alloc(1, 0, 1, {0.5, 0.5, 0.4})).ok());
  ASSERT_TRUE(c.Add(Alloc(2, 0, 1, {0.5, 0.5, 0.6})).ok());
  ASSERT_TRUE(c.Add(Alloc(3, 0, 1, {0.25, 0.25, 1.0})).ok());
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_held, 0.2 + 0.3 + 0.25, 1e-12);
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_limit, 1.25, 1e-12);
}

TEST(SpatioTemporalQuotaTest, UpdateQuotaKeepsSumsOnEveryGpu) {
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  ASSERT_TRUE(c.Add(Alloc(1, 0, 2, {0.5, 0.5, 0.2})).ok());
  ASSERT_TRUE(c.Add(Alloc(1, 1, 2, {0.5, 0.5, 0.2})).ok());  // a two-GPU instance
  ASSERT_TRUE(c.Add(Alloc(2, 0, 2, {0.5, 0.5, 0.5})).ok());
  ASSERT_TRUE(c.UpdateQuota(InstanceId(1), {0.5, 0.5, 0.7}).ok());
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_held, 0.35 + 0.25, 1e-12);
  EXPECT_NEAR(c.gpu(GpuId(1)).sum_held, 0.35, 1e-12);
  EXPECT_DOUBLE_EQ(c.gpu(GpuId(1)).allocations[0].quota.time_quota, 0.7);
  // A new <request, limit> too (Dilu-style), sums follow.
  ASSERT_TRUE(c.UpdateQuota(InstanceId(2), {0.2, 0.4, 1.0}).ok());
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_request, 0.7, 1e-12);
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_limit, 0.9, 1e-12);
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_held, 0.35 + 0.4, 1e-12);
}

TEST(SpatioTemporalQuotaTest, UpdateQuotaRejectsUnknownInstanceAndBadQuota) {
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  ASSERT_TRUE(c.Add(Alloc(1, 0, 2, {0.5, 0.5, 0.2})).ok());
  EXPECT_EQ(c.UpdateQuota(InstanceId(9), {0.5, 0.5, 0.5}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.UpdateQuota(InstanceId(1), {0.5, 0.5, 1.5}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.UpdateQuota(InstanceId(1), {0.6, 0.5, 0.5}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NEAR(c.gpu(GpuId(0)).sum_held, 0.1, 1e-12);  // unchanged
  c.Remove(InstanceId(1));
  EXPECT_EQ(c.UpdateQuota(InstanceId(1), {0.5, 0.5, 0.5}).code(), absl::StatusCode::kNotFound);
}

SmQuota RandomQuota(std::mt19937& rng) {
  std::uniform_int_distribution<int> pct(1, 100);
  const double limit = pct(rng) / 100.0;
  const double request = limit * pct(rng) / 100.0;
  return {request, limit, pct(rng) / 100.0};
}

// After any sequence of Add / UpdateQuota / Remove, each GPU's sums equal the sums over its
// allocations, and the active set is exactly the GPUs with allocations.
TEST(SpatioTemporalQuotaPropertyTest, PerGpuSumsEqualSumsOverAllocations) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed=" << seed);
    std::mt19937 rng(seed);
    ClusterState c(ClusterSpec::Uniform(2, NodeSpec{}));
    std::vector<int> live;
    int next = 0;
    for (int step = 0; step < 300; ++step) {
      const int op = static_cast<int>(rng() % 3);
      if (op == 0 || live.empty()) {
        const int g = static_cast<int>(rng() % c.gpu_count());
        if (c.Add(Alloc(next, g, 1 + rng() % 8, RandomQuota(rng))).ok())
          live.push_back(next);
        ++next;
      } else if (op == 1) {
        ASSERT_TRUE(c.UpdateQuota(InstanceId(live[rng() % live.size()]), RandomQuota(rng)).ok());
      } else {
        const size_t i = rng() % live.size();
        EXPECT_EQ(c.Remove(InstanceId(live[i])).size(), 1u);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
      for (const GpuState& g : c.gpus()) {
        double req = 0, lim = 0, held = 0;
        for (const Allocation& a : g.allocations) {
          req += a.quota.request;
          lim += a.quota.limit;
          held += a.quota.held();
        }
        ASSERT_NEAR(g.sum_request, req, 1e-9);
        ASSERT_NEAR(g.sum_limit, lim, 1e-9);
        ASSERT_NEAR(g.sum_held, held, 1e-9);
        const auto& act = c.active_gpus();
        ASSERT_EQ(std::find(act.begin(), act.end(), g.id) != act.end(), g.active());
      }
    }
  }
}

}  // namespace
}  // namespace sluice::core
