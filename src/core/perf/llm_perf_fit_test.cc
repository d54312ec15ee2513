// Tests of the LLM constant fits on synthetic Vidur-shaped data (the real tables are exercised by
// src/sim/perf_fit's data test): recovery of known parameters, parse errors naming file:line.
#include "core/perf/llm_perf_fit.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

TEST(LlmPerfFitTest, RecoversAKnownTokenLinearCurve) {
  const LlmLinearParams truth = {2.9e-4, 2.0e-6, 1.6};
  std::vector<VidurLayerTime> rows;
  for (int n = 1; n <= 4096; n *= 2)
    rows.push_back({n, 1, LlmLinearLayerSeconds(truth, n), n});
  auto fit = FitLlmLinear(rows);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->params.t0_s, truth.t0_s, 1e-3 * truth.t0_s);
  EXPECT_NEAR(fit->params.c_s, truth.c_s, 1e-3 * truth.c_s);
  EXPECT_NEAR(fit->params.p, truth.p, 1e-2);
  EXPECT_LT(fit->error.mape, 0.1);
  EXPECT_EQ(fit->error.points, 13);
}

TEST(LlmPerfFitTest, LinearCurveIsMonotoneAndZeroAtZero) {
  const LlmLinearParams p = {1e-4, 1e-6, 1.3};
  EXPECT_EQ(LlmLinearLayerSeconds(p, 0), 0);
  double prev = 0;
  for (int n = 1; n < 100000; n = n * 3 / 2 + 1) {
    EXPECT_GE(LlmLinearLayerSeconds(p, n), prev);
    prev = LlmLinearLayerSeconds(p, n);
  }
}

TEST(LlmPerfFitTest, SelectsRowsByTp) {
  std::vector<VidurLayerTime> rows = {{1, 1, 1e-3, 2}, {1, 2, 5e-4, 3}, {2, 2, 5e-4, 4}};
  EXPECT_EQ(VidurRowsAtTp(rows, 2).size(), 2u);
  EXPECT_FALSE(FitLlmLinear(VidurRowsAtTp(rows, 2)).ok());  // too few rows
}

std::string AllReduceCsv(double latency_s, double bytes_per_s) {
  std::string csv =
      ",time_stats.all_reduce.median,num_workers,size,devices_per_node\n";
  int i = 0;
  for (int workers : {2, 4}) {
    for (int64_t size = 2048; size <= (int64_t{64} << 20); size *= 4) {
      double ms = (latency_s + static_cast<double>(size) / bytes_per_s) * 1000.0;
      absl::StrAppend(&csv, i++, ",", ms, ",", workers, ",", size, ",", workers, "\n");
      // An inter-node row the fit must ignore.
      absl::StrAppend(&csv, i++, ",", 10 * ms, ",", workers, ",", size, ",1\n");
    }
  }
  return csv;
}

TEST(LlmPerfFitTest, AllReduceParsesAndFitsTheIntraNodeLine) {
  auto rows = ParseVidurAllReduce(AllReduceCsv(3e-5, 150e9), "ar.csv");
  ASSERT_TRUE(rows.ok()) << rows.status();
  auto fit = FitAllReduce(*rows, 2);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_NEAR(fit->params.latency_s, 3e-5, 1e-7);
  EXPECT_NEAR(fit->params.bytes_per_s, 150e9, 1e8);
  EXPECT_LT(fit->error.mape, 0.01);
  EXPECT_FALSE(FitAllReduce(*rows, 8).ok());  // no rows for 8 GPUs
}

TEST(LlmPerfFitTest, AllReduceErrorsNameFileLineAndField) {
  auto bad = ParseVidurAllReduce(
      ",time_stats.all_reduce.median,num_workers,size,devices_per_node\n0,0.1,two,2048,2\n",
      "ar.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("ar.csv:2"));
  EXPECT_THAT(bad.status().message(), HasSubstr("num_workers"));
  auto header = ParseVidurAllReduce("a,b\n1,2\n", "ar.csv");
  ASSERT_FALSE(header.ok());
  EXPECT_THAT(header.status().message(), HasSubstr("header"));
}

}  // namespace
}  // namespace sluice::core
