// Properties of the HybridAutoscaler over random clusters (built by HasGpuPlacement, so aligned)
// and random loads: applied in order, its actions are always accepted by ClusterState (memory),
// every GPU stays within the alignment rule (types <= limit, time <= 1 per slot), no action names
// a GPU without the function's memory, and the function keeps >= 1 pod.
#include <random>

#include "gtest/gtest.h"

#include "core/hasgpu/aligned_gpu.h"
#include "core/hasgpu/hasgpu_placement.h"
#include "core/hasgpu/hybrid_autoscaler.h"
#include "core/hasgpu/testing/linear_latency.h"

namespace sluice::core {
namespace {

constexpr int kTypes = 2;

// Random neighbours placed by HasGpuPlacement.
void Populate(ClusterState& state, std::mt19937& rng, int count, int& next_instance) {
  HasGpuPlacement placement({"has-gpu", kTypes, HeldOrder::kLeastHeld});
  std::uniform_int_distribution<int> tenth(1, 10);
  for (int i = 0; i < count; ++i) {
    InstanceDemand d;
    d.instance = InstanceId(next_instance++);
    d.function = FunctionId(100 + i);
    d.memory_per_gpu = Bytes::GiB(tenth(rng));
    const double s = tenth(rng) / 10.0;
    d.quota = {s, s, tenth(rng) / 10.0};
    absl::StatusOr<std::vector<GpuId>> g = placement.Place(d, state);
    if (!g.ok())
      continue;
    ASSERT_TRUE(state.Add({d.instance, d.function, (*g)[0], d.memory_per_gpu, d.quota}).ok());
  }
}

TEST(HybridAutoscalerPropertyTest, ActionsKeepAlignmentMemoryAndOnePod) {
  LinearLatency latency;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed=" << seed);
    std::mt19937 rng(seed);
    ClusterState state(ClusterSpec::Uniform(1 + static_cast<int>(rng() % 3), NodeSpec{}));
    int next = 1;
    Populate(state, rng, static_cast<int>(rng() % 20), next);
    HasGpuFunction fn;
    fn.latency = &latency;
    fn.max_batch = 1 << (rng() % 4);
    fn.memory = Bytes::GiB(1 + rng() % 12);
    fn.slo = rng() % 2 ? absl::InfiniteDuration() : absl::Milliseconds(50 + rng() % 400);
    HybridAutoscalerConfig cfg;
    cfg.cooldown = absl::Seconds(rng() % 5);
    auto scaler = HybridAutoscaler::Create(cfg, fn);
    ASSERT_TRUE(scaler.ok());
    std::vector<PodView> pods;
    std::lognormal_distribution<double> load(3, 1.5);
    for (int t = 0; t < 120; ++t) {
      const absl::Time now = absl::UnixEpoch() + absl::Seconds(t);
      (*scaler)->Observe(LoadSample{now, load(rng), static_cast<int>(pods.size()), 0, 0});
      for (const ScalingAction& a : (*scaler)->Decide(now, pods, state)) {
        if (a.kind == ScalingAction::Kind::kAdd) {
          ASSERT_GE(state.gpu(a.gpu).memory_free(), fn.memory);
          const InstanceId id(next++);
          ASSERT_TRUE(state.Add({id, FunctionId(1), a.gpu, fn.memory, a.quota}).ok());
          pods.push_back({id, a.gpu, a.quota, a.batch, true});
        } else if (a.kind == ScalingAction::Kind::kSetQuota) {
          ASSERT_TRUE(state.UpdateQuota(a.instance, a.quota).ok());
          for (PodView& p : pods) {
            if (p.instance == a.instance)
              p.quota = a.quota;
          }
        } else {
          ASSERT_EQ(state.Remove(a.instance).size(), 1u);
          std::erase_if(pods, [&](const PodView& p) { return p.instance == a.instance; });
        }
      }
      if (state.active_gpus().size() < static_cast<size_t>(state.gpu_count()) || !pods.empty()) {
        ASSERT_GE(pods.size(), 1u) << "t=" << t;
      }
      for (const GpuState& g : state.gpus()) {
        ASSERT_TRUE(AlignedGpu(g, kTypes).Valid()) << "gpu " << g.id.value() << " t=" << t;
        ASSERT_LE(g.sum_held, 1.0 + 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace sluice::core
