// FragmentationMeter (fragmentation.h): its cached readings equal MeasureDilu / MeasureFgd bit
// for bit after every change of a random sequence of adds, removes and quota updates, including
// readings with nothing changed in between and a node going idle and active again.
#include <random>
#include <vector>

#include "gtest/gtest.h"

#include "core/resource/fragmentation.h"

namespace sluice::core {
namespace {

TargetWorkload Mix() {
  TargetWorkload w;
  w.tasks.push_back({1, 0.3, Bytes::GiB(8), 3.0});
  w.tasks.push_back({1, 0.6, Bytes::GiB(16), 1.0});
  w.tasks.push_back({2, 1.0, Bytes::GiB(20), 0.5});
  w.tasks.push_back({1, 0.2, Bytes::GiB(4), 1.0, 0.5});
  return w;
}

void ExpectSame(FragmentationMeter& meter, const ClusterState& c, const TargetWorkload& w,
                int step) {
  const FragmentationMeter::Reading r = meter.Measure(c);
  const DiluFragmentation d = MeasureDilu(c);
  EXPECT_EQ(r.dilu.active_gpus, d.active_gpus) << "step " << step;
  EXPECT_EQ(r.dilu.sm_sum, d.sm_sum) << "step " << step;
  EXPECT_EQ(r.dilu.memory_sum, d.memory_sum) << "step " << step;
  EXPECT_EQ(r.dilu.memory_free, d.memory_free) << "step " << step;
  const double fgd = w.tasks.empty() ? 0.0 : MeasureFgd(c, w).ratio();
  EXPECT_EQ(r.fgd, fgd) << "step " << step;
}

void RunRandomChanges(const TargetWorkload& w, uint32_t seed) {
  ClusterState c(ClusterSpec::Uniform(6, NodeSpec{}));  // 6 nodes x 4 GPUs x 40 GiB
  FragmentationMeter meter(w);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int> live;
  int next = 1;
  for (int step = 0; step < 1500; ++step) {
    const double op = u(rng);
    if (op < 0.45 || live.empty()) {
      const int gpu = static_cast<int>(u(rng) * c.gpu_count()) % c.gpu_count();
      const double req = 0.05 + 0.5 * u(rng);
      const double quota = u(rng) < 0.2 ? 0.5 : 1.0;
      const Allocation a{InstanceId(next),
                         FunctionId(1),
                         GpuId(gpu),
                         Bytes::MiB(1024 + static_cast<int64_t>(u(rng) * 12000)),
                         {req, std::min(1.0, req * 2), quota}};
      if (c.Add(a).ok())
        live.push_back(next);
      ++next;
    } else if (op < 0.75) {
      const size_t k = static_cast<size_t>(u(rng) * static_cast<double>(live.size()));
      c.Remove(InstanceId(live[k]));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op < 0.95) {
      const size_t k = static_cast<size_t>(u(rng) * static_cast<double>(live.size()));
      const double req = 0.01 + 0.6 * u(rng);
      ASSERT_TRUE(c.UpdateQuota(InstanceId(live[k]), {req, std::min(1.0, req * 1.5)}).ok());
    }  // else: nothing changes before this reading
    ExpectSame(meter, c, w, step);
  }
}

TEST(FragmentationMeterTest, ReadingsEqualTheDirectMeasuresBitForBit) {
  for (uint32_t seed : {1u, 2u, 3u})
    RunRandomChanges(Mix(), seed);
}

TEST(FragmentationMeterTest, WithoutAWorkloadFgdIsZero) {
  RunRandomChanges(TargetWorkload{}, 7);
}

TEST(FragmentationMeterTest, VersionMovesOnEveryChange) {
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  const Allocation a{InstanceId(1), FunctionId(1), GpuId(0), Bytes::GiB(4), {0.3, 0.3}};
  const uint64_t v0 = c.gpu(GpuId(0)).version;
  ASSERT_TRUE(c.Add(a).ok());
  const uint64_t v1 = c.gpu(GpuId(0)).version;
  EXPECT_GT(v1, v0);
  ASSERT_TRUE(c.UpdateQuota(InstanceId(1), {0.4, 0.4}).ok());
  const uint64_t v2 = c.gpu(GpuId(0)).version;
  EXPECT_GT(v2, v1);
  c.Remove(InstanceId(1));
  EXPECT_GT(c.gpu(GpuId(0)).version, v2);
  EXPECT_FALSE(c.Add({InstanceId(2), FunctionId(1), GpuId(0), Bytes::GiB(400), {0.3, 0.3}}).ok());
  EXPECT_EQ(c.gpu(GpuId(0)).version, v2 + 1);  // a failed add changes nothing
}

}  // namespace
}  // namespace sluice::core
