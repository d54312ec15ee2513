// Reading an --out directory back: CSV and summary parsing, errors naming file and line, and the
// Pareto front as a property over random point sets.
#include "sim/report/report_data.h"

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

TEST(ReportDataTest, ParsesTimelineColumnMajor) {
  absl::StatusOr<Timeline> t = ParseTimelineCsv("t_s,a,b\n0,1,2\n1,3,\n", "x.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->columns, ::testing::ElementsAre("t_s", "a", "b"));
  EXPECT_EQ(t->values[1], (std::vector<double>{1, 3}));
  EXPECT_TRUE(std::isnan(t->values[2][1]));
  EXPECT_EQ(t->Column("b"), 2);
  EXPECT_EQ(t->Column("zz"), -1);
}

TEST(ReportDataTest, CsvErrorsNameFileLineAndField) {
  absl::StatusOr<Timeline> t = ParseTimelineCsv("t_s,a\n0,1\n1\n", "dir/x.csv");
  EXPECT_THAT(t.status().message(), HasSubstr("dir/x.csv:3: field 'row': expected 2 values"));
  t = ParseTimelineCsv("t_s,a\n0,abc\n", "x.csv");
  EXPECT_THAT(t.status().message(), HasSubstr("x.csv:2: field 'a': not a number: 'abc'"));
  t = ParseTimelineCsv("time,a\n", "x.csv");
  EXPECT_THAT(t.status().message(), HasSubstr("x.csv:1: field 't_s'"));
  EXPECT_FALSE(ParseTimelineCsv("", "x.csv").ok());
}

TEST(ReportDataTest, ParsesSimulationSummary) {
  const std::string json = R"({"experiment": "e", "seed": 1, "runs": [
    {"policy": "dilu", "workload": "default", "gpu_seconds": 10, "cost_usd": 0.5,
     "mean_active_gpus": 1.5, "functions": [
       {"name": "f", "requests": 300, "p50_ms": 5, "p95_ms": 9, "p99_ms": 12, "mean_ms": 6,
        "svr": 0.1, "cold_starts": 2},
       {"name": "g", "requests": 100, "p50_ms": null, "svr": 0.5, "cold_starts": 0}]}]})";
  absl::StatusOr<ReportData> d = ParseSummaryJson(json, "s.json");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->kind, "simulation");
  ASSERT_EQ(d->runs.size(), 1u);
  const ReportRun& r = d->runs[0];
  EXPECT_EQ(r.timeline_file, "dilu_default_timeline.csv");
  EXPECT_DOUBLE_EQ(r.mean_gpus, 1.5);
  EXPECT_DOUBLE_EQ(*r.svr, (0.1 * 300 + 0.5 * 100) / 400);
  ASSERT_EQ(r.functions[0].latency_ms.size(), 3u);  // p50, p95, p99; not mean_ms
  EXPECT_EQ(r.functions[0].latency_ms[2].first, "p99_ms");
  EXPECT_EQ(*r.functions[0].cold_starts, 2);
}

TEST(ReportDataTest, ParsesLlmSummary) {
  const std::string json = R"({"experiment": "l", "kind": "llm_serving", "runs": [
    {"policy": "blitzscale", "gpu_seconds": 4, "mean_gpus": 2, "functions": [
      {"name": "m", "requests": 10, "ttft_p50_ms": 100, "ttft_p99_ms": 900,
       "slo_attainment": 0.75, "scale_outs": 3}]}]})";
  absl::StatusOr<ReportData> d = ParseSummaryJson(json, "s.json");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->runs[0].timeline_file, "blitzscale_timeline.csv");
  EXPECT_DOUBLE_EQ(*d->runs[0].svr, 0.25);
  EXPECT_EQ(*d->runs[0].functions[0].cold_starts, 3);
  EXPECT_DOUBLE_EQ(d->runs[0].mean_gpus, 2);
}

TEST(ReportDataTest, SummaryErrorsNameTheFile) {
  EXPECT_THAT(ParseSummaryJson("{not json", "d/summary.json").status().message(),
              HasSubstr("d/summary.json: field 'summary': not a JSON object"));
  EXPECT_THAT(ParseSummaryJson("{\"runs\": []}", "s.json").status().message(),
              HasSubstr("s.json: field 'runs': missing or empty"));
  EXPECT_THAT(ParseSummaryJson("{\"runs\": [{}]}", "s.json").status().message(),
              HasSubstr("field 'runs[0].policy': missing"));
}

TEST(ReportDataTest, LoadReportDirNamesTheMissingFile) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "report_data_dir";
  std::filesystem::remove_all(dir);
  EXPECT_THAT(LoadReportDir(dir.string()).status().message(), HasSubstr("no such directory"));
  std::filesystem::create_directories(dir);
  EXPECT_THAT(LoadReportDir(dir.string()).status().message(), HasSubstr("summary.json"));
  std::ofstream(dir / "summary.json") << R"({"runs": [{"policy": "p", "workload": "w"}]})";
  const absl::Status s = LoadReportDir(dir.string()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("p_w_timeline.csv"));
  std::ofstream(dir / "p_w_timeline.csv") << "t_s,active_gpus\n0,1\n";
  EXPECT_TRUE(LoadReportDir(dir.string()).ok());
}

TEST(ReportDataTest, LoadsOnlyTheTopFunctionsColumns) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "report_top";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string summary = R"({"runs": [{"policy": "p", "workload": "w", "functions": [)";
  std::string header = "t_s,active_gpus", row = "0,1";
  for (int i = 0; i < 12; ++i) {
    summary += absl::StrCat(i ? "," : "", R"({"name": "f)", i, R"(", "requests": )", i, "}");
    header += absl::StrCat(",f", i, "_instances,f", i, "_rps");
    row += ",1,2";
  }
  std::ofstream(dir / "summary.json") << summary << "]}]}";
  std::ofstream(dir / "p_w_timeline.csv") << header << "\n" << row << "\n";
  absl::StatusOr<ReportData> d = LoadReportDir(dir.string());
  ASSERT_TRUE(d.ok()) << d.status();
  const Timeline& t = d->runs[0].timeline;
  EXPECT_EQ(t.columns.size(), 2u + 2u * kReportTopFunctions);
  EXPECT_EQ(t.Column("f3_rps"), -1);  // outside the top 8 by requests
  EXPECT_GE(t.Column("f11_instances"), 0);
  EXPECT_GE(t.Column("f4_rps"), 0);
}

TEST(ReportDataTest, FrontsAreTakenWithinEachWorkload) {
  ReportData d;
  for (const char* w : {"a", "b", "a", "b"}) {
    ReportRun r;
    r.policy = "p";
    r.workload = w;
    d.runs.push_back(r);
  }
  // Workload b's runs are worse than a's on both axes, yet both make b's own front.
  const std::vector<std::pair<double, double>> pts = {{1, 1}, {5, 5}, {2, 2}, {6, 4}};
  EXPECT_THAT(WorkloadFronts(d, pts), ::testing::ElementsAre(true, true, false, true));
  EXPECT_THAT(ParetoFront(pts), ::testing::ElementsAre(true, false, false, false));
}

TEST(ReportDataTest, ParetoFrontHandlesTiesAndNaN) {
  const std::vector<std::pair<double, double>> pts = {{1, 5}, {2, 1}, {3, 4}, {1, 5}, {NAN, 0}};
  EXPECT_THAT(ParetoFront(pts), ::testing::ElementsAre(true, true, false, true, false));
}

// Property: no front point is dominated, and every other finite point is dominated by a front one.
TEST(ReportDataTest, ParetoFrontPropertyOverRandomSets) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> coord(0, 9), size(1, 12);
    std::vector<std::pair<double, double>> pts(static_cast<size_t>(size(rng)));
    for (auto& p : pts) p = {coord(rng), coord(rng)};
    const std::vector<bool> front = ParetoFront(pts);
    auto dominates = [](auto a, auto b) {
      return a.first <= b.first && a.second <= b.second && (a.first < b.first || a.second < b.second);
    };
    for (size_t i = 0; i < pts.size(); ++i) {
      bool dominated = false, by_front = false;
      for (size_t k = 0; k < pts.size(); ++k) {
        if (!dominates(pts[k], pts[i])) continue;
        dominated = true;
        by_front = by_front || front[k];
      }
      ASSERT_EQ(front[i], !dominated) << "seed " << seed << " point " << i;
      if (dominated) {
        ASSERT_TRUE(by_front) << "seed " << seed << " point " << i;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::sim
