// Property tests of the zigzag plans over seeded random inputs: the schedule respects C2, C3,
// FIFO and one-layer-at-a-time on each instance, and the ILP plan is never worse than best effort.
#include <random>

#include "core/llm/zigzag.h"
#include "gtest/gtest.h"

namespace sluice::core::llm {
namespace {

ZigzagInput RandomInput(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  ZigzagInput in;
  in.num_layers = 2 + static_cast<int>(u(rng) * 31);
  const int batches = 1 + static_cast<int>(u(rng) * 10);
  for (int i = 0; i < batches; ++i)
    in.weight.push_back(0.3 + 2 * u(rng));
  in.layer_load_time = u(rng) < 0.1 ? 0 : 12 * u(rng);
  in.layers_loaded = static_cast<int>(u(rng) * 3);
  if (u(rng) < 0.2)
    in.max_target_layers = static_cast<int>(u(rng) * (in.num_layers + 1));
  in.time_limit_ms = 200;  // generous: the properties, not the speed, are under test
  return in;
}

TEST(ZigzagPropertyTest, ScheduleRespectsC2C3AndFifo) {
  for (int seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    const ZigzagInput in = RandomInput(rng);
    std::vector<int> x;
    for (size_t i = 0; i < in.weight.size(); ++i)
      x.push_back(static_cast<int>(std::uniform_int_distribution<int>(0, in.num_layers)(rng)));
    const ZigzagSchedule s = SimulateZigzagSchedule(in, x);
    std::vector<int> done(x.size(), 0);
    double target_free = 0;
    for (const ZigzagTask& t : s.target) {
      ASSERT_GE(t.start, LayerReadyTime(in, t.layer)) << "C3, seed " << seed;
      ASSERT_GE(t.start, target_free) << "overlap, seed " << seed;
      ASSERT_EQ(t.layer, done[t.batch] + 1) << "layer order, seed " << seed;
      ASSERT_NEAR(t.end - t.start, in.weight[t.batch], 1e-9);
      done[t.batch] = t.layer;
      target_free = t.end;
    }
    double source_free = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(done[i], x[i]) << "C1, seed " << seed;
      ASSERT_GE(s.source_start[i], s.target_finish[i]) << "C2, seed " << seed;
      ASSERT_GE(s.source_start[i], source_free) << "source FIFO, seed " << seed;
      source_free = s.finish[i];
      ASSERT_NEAR(s.finish[i] - s.source_start[i], (in.num_layers - x[i]) * in.weight[i], 1e-9);
    }
  }
}

TEST(ZigzagPropertyTest, IlpNeverWorseThanBestEffort) {
  int ilp_plans = 0, strictly_better = 0;
  const int cases = 300;
  for (int seed = 0; seed < cases; ++seed) {
    std::mt19937 rng(7000 + seed);
    const ZigzagInput in = RandomInput(rng);
    const auto zz = PlanZigzag(in);
    const auto be = PlanBestEffort(in);
    ASSERT_TRUE(zz.ok() && be.ok()) << "seed " << seed;
    ASSERT_LE(zz->mean_latency, be->mean_latency + 1e-9) << "seed " << seed;
    const int cap = TargetLayerCap(in);
    for (int xi : zz->target_layers)
      ASSERT_TRUE(xi >= 0 && xi <= cap) << "seed " << seed;
    ASSERT_EQ(zz->finish_time, SimulateZigzag(in, zz->target_layers)) << "seed " << seed;
    ilp_plans += zz->method != "best-effort";
    strictly_better += zz->mean_latency < be->mean_latency - 1e-9;
  }
  // The guard (best effort when the ILP's plan loses under the real schedule) must be the
  // exception: the ILP itself is expected to win or tie almost always.
  EXPECT_GE(ilp_plans, cases * 9 / 10);
  EXPECT_GE(strictly_better, cases / 3);
}

}  // namespace
}  // namespace sluice::core::llm
