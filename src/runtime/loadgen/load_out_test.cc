// `sluice load --out`: the summary and timeline in the layout src/sim/report reads.
#include "runtime/loadgen/load_out.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

LoadReport Report() {
  LoadReport r;
  r.function = "clf";
  r.duration = absl::Seconds(10);
  r.sent = 100;
  r.ok = 99;
  r.svr = 0.02;
  r.latency.p50 = absl::Milliseconds(5);
  r.latency.p99 = absl::Milliseconds(40);
  r.cold_starts = 1;
  r.timeline = {{absl::Milliseconds(100), {{"clf", "ready", 1, {{7, "ready", 0.5, 0.3, 0.6}}}}},
                {absl::Milliseconds(200),
                 {{"clf", "ready", 1, {{7, "ready", 0.6, 0.3, 0.6}, {9, "starting", 0, 0.3, 0.6}}}}}};
  return r;
}

TEST(LoadOutTest, SummaryHasTheSimulatorLayout) {
  const nlohmann::json j = nlohmann::json::parse(LoadSummaryJson(Report()));
  EXPECT_EQ(j["kind"], "load");
  EXPECT_EQ(j["runs"][0]["policy"], "clf");
  EXPECT_EQ(j["runs"][0]["functions"][0]["requests"], 100);
  EXPECT_EQ(j["runs"][0]["functions"][0]["p99_ms"], 40.0);
  EXPECT_EQ(j["runs"][0]["functions"][0]["cold_starts"], 1);
}

TEST(LoadOutTest, TimelineHasInstancesAndSharesWithGapsForAbsentInstances) {
  EXPECT_EQ(LoadTimelineCsv(Report()),
            "t_s,clf_instances,clf-7_sm_share,clf-9_sm_share\n"
            "0.100,1,0.5,\n"
            "0.200,2,0.6,0\n");
}

TEST(LoadOutTest, WriteNamesTheDirectoryOnFailure) {
  const absl::Status s = WriteLoadOutputDir("/proc/no/such", Report());
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("/proc/no/such"));
}

}  // namespace
}  // namespace sluice::runtime
