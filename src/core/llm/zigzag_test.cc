#include "core/llm/zigzag.h"

#include <numeric>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// BlitzScale's Figure 12: a 7-layer model, loading one layer takes as long as 6 layer
// computations, six equal batches queued; time 0 is when the first layer is on the target.
ZigzagInput Figure12() {
  ZigzagInput in;
  in.num_layers = 7;
  in.weight.assign(6, 1.0);
  in.layer_load_time = 6;
  in.layers_loaded = 1;
  return in;
}

TEST(ZigzagTest, Figure12BestEffortUsesOneLayerForEveryBatch) {
  const auto be = PlanBestEffort(Figure12());
  ASSERT_TRUE(be.ok()) << be.status();
  EXPECT_THAT(be->target_layers, ElementsAre(1, 1, 1, 1, 1, 1));
  // The source runs six layers per batch back to back from time 1.
  EXPECT_THAT(be->finish_time, ElementsAre(7, 13, 19, 25, 31, 37));
  EXPECT_EQ(be->method, "best-effort");
}

TEST(ZigzagTest, Figure12ZigzagBeatsBestEffort) {
  const ZigzagInput in = Figure12();
  const auto zz = PlanZigzag(in);
  const auto be = PlanBestEffort(in);
  ASSERT_TRUE(zz.ok()) << zz.status();
  EXPECT_EQ(zz->method, "ilp");
  EXPECT_TRUE(zz->optimal);
  EXPECT_LT(Sum(zz->finish_time), Sum(be->finish_time));
  EXPECT_LT(zz->finish_time.back(), be->finish_time.back());
  // The paper's batch 3 finishes at 17 = 12 (batches 1 and 2) + 5 (its own 5 source layers):
  // batches after the first wait for layer 2 and take two layers on the target.
  EXPECT_EQ(zz->finish_time[2], 17);
  EXPECT_THAT(zz->finish_time, ElementsAre(7, 12, 17, 21, 25, 29));
  EXPECT_THAT(zz->finish_time, ElementsAreArray(SimulateZigzag(in, zz->target_layers)));
  EXPECT_DOUBLE_EQ(zz->mean_latency, Sum(zz->finish_time) / 6);
}

TEST(ZigzagTest, Figure12TargetComesBackForLayerTwo) {
  const ZigzagInput in = Figure12();
  const ZigzagSchedule s = SimulateZigzagSchedule(in, {1, 2, 2, 3, 3, 3});
  // Layer 1 of every batch first (layer 2 arrives at 6), then back to layer 2: the zigzag.
  ASSERT_GE(s.target.size(), 7u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(s.target[i].layer, 1);
    EXPECT_EQ(s.target[i].batch, i);
    EXPECT_EQ(s.target[i].start, i);
  }
  EXPECT_EQ(s.target[6].layer, 2);
  EXPECT_EQ(s.target[6].batch, 1);
  EXPECT_EQ(s.target[6].start, 6);
  EXPECT_THAT(s.finish, ElementsAre(7, 12, 17, 21, 25, 29));
}

TEST(ZigzagTest, ALoneBatchGainsNothing) {
  ZigzagInput in;
  in.num_layers = 8;
  in.weight = {1};
  in.layers_loaded = 8;
  const auto zz = PlanZigzag(in);
  ASSERT_TRUE(zz.ok());
  EXPECT_THAT(zz->finish_time, ElementsAre(8));  // a lone batch gains nothing from a split
}

TEST(ZigzagTest, CapZeroKeepsEverythingOnTheSource) {
  ZigzagInput in = Figure12();
  in.max_target_layers = 0;
  const auto zz = PlanZigzag(in);
  ASSERT_TRUE(zz.ok());
  EXPECT_THAT(zz->target_layers, ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_THAT(zz->finish_time, ElementsAre(7, 14, 21, 28, 35, 42));
}

TEST(ZigzagTest, NothingLoadedBestEffortWaitsForTheFirstLayer) {
  ZigzagInput in = Figure12();
  in.layers_loaded = 0;  // layer 1 arrives at 6
  const auto be = PlanBestEffort(in);
  ASSERT_TRUE(be.ok());
  EXPECT_EQ(be->target_layers[0], 1);
  const ZigzagSchedule s = SimulateZigzagSchedule(in, be->target_layers);
  EXPECT_EQ(s.target.front().start, 6);
  const auto zz = PlanZigzag(in);
  ASSERT_TRUE(zz.ok());
  EXPECT_LE(zz->mean_latency, be->mean_latency);
}

TEST(ZigzagTest, WeightsScaleLayerTimes) {
  ZigzagInput in;
  in.num_layers = 4;
  in.weight = {2, 0.5};
  in.layers_loaded = 4;
  const ZigzagSchedule s = SimulateZigzagSchedule(in, {2, 1});
  EXPECT_THAT(s.target_finish, ElementsAre(4, 4.5));
  EXPECT_THAT(s.source_start, ElementsAre(4, 8));
  EXPECT_THAT(s.finish, ElementsAre(8, 9.5));
}

TEST(ZigzagTest, BadInputNamesTheField) {
  struct Case {
    void (*mutate)(ZigzagInput&);
    const char* field;
  };
  const Case cases[] = {
      {[](ZigzagInput& in) { in.num_layers = 0; }, "num_layers"},
      {[](ZigzagInput& in) { in.weight.clear(); }, "weight"},
      {[](ZigzagInput& in) { in.weight[3] = 0; }, "weight[3]"},
      {[](ZigzagInput& in) { in.layer_load_time = -1; }, "layer_load_time"},
      {[](ZigzagInput& in) { in.layers_loaded = 8; }, "layers_loaded"},
      {[](ZigzagInput& in) { in.max_target_layers = 9; }, "max_target_layers"},
      {[](ZigzagInput& in) { in.time_limit_ms = 0; }, "time_limit_ms"},
  };
  for (const Case& c : cases) {
    ZigzagInput in = Figure12();
    c.mutate(in);
    for (const auto& r : {PlanZigzag(in), PlanBestEffort(in)}) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
      EXPECT_THAT(r.status().message(), HasSubstr(c.field));
    }
  }
}

}  // namespace
}  // namespace sluice::core::llm
