// The report page: well-formed, offline (no "http"), one chart per expected series, the top-N cut
// for many functions, pareto.svg beside it, and WriteReport's errors naming the file.
#include "sim/report/html_report.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/testing/well_formed.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::XmlError;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A simulation-layout run with `n` functions f0..f<n-1> (f<i> has i+1 requests).
ReportRun Run(const std::string& policy, int n, double svr, double gpus) {
  ReportRun r;
  r.policy = policy;
  r.workload = "default";
  r.timeline_file = policy + "_default_timeline.csv";
  r.mean_gpus = gpus;
  r.gpu_seconds = gpus * 100;
  r.svr = svr;
  r.timeline.columns = {"t_s", "active_gpus", "allocated_share", "sm_fragmentation",
                        "mem_fragmentation", "cost_usd"};
  for (int i = 0; i < n; ++i) r.timeline.columns.push_back(absl::StrCat("f", i, "_instances"));
  for (int i = 0; i < n; ++i) r.timeline.columns.push_back(absl::StrCat("f", i, "_rps"));
  r.timeline.values.assign(r.timeline.columns.size(), {});
  for (int t = 0; t < 5; ++t) {
    for (size_t c = 0; c < r.timeline.columns.size(); ++c) {
      r.timeline.values[c].push_back(c == 0 ? t : t * 0.5 + static_cast<double>(c));
    }
  }
  for (int i = 0; i < n; ++i) {
    r.functions.push_back({absl::StrCat("f", i), static_cast<double>(i + 1),
                           {{"p50_ms", 1.0}, {"p95_ms", 2.0}, {"p99_ms", 3.0}}, 1.0, svr});
  }
  return r;
}

ReportData Data(int functions) {
  ReportData d;
  d.experiment = "tiny <exp>";
  d.kind = "simulation";
  d.runs = {Run("exclusive", functions, 0.01, 4), Run("dilu", functions, 0.02, 2),
            Run("worse", functions, 0.05, 3)};
  return d;
}

TEST(HtmlReportTest, OneChartPerExpectedSeriesPerRun) {
  const std::vector<ReportChart> charts = ReportCharts(Data(2));
  std::vector<std::string> ids;
  for (const ReportChart& c : charts) ids.push_back(c.id);
  EXPECT_THAT(ids, ::testing::ElementsAre(
                       "svr-vs-cost", "pareto", "run0-cluster", "run0-instances", "run0-load",
                       "run0-fragmentation", "run0-cost", "run0-latency", "run0-cold-starts",
                       "run1-cluster", "run1-instances", "run1-load", "run1-fragmentation",
                       "run1-cost", "run1-latency", "run1-cold-starts", "run2-cluster",
                       "run2-instances", "run2-load", "run2-fragmentation", "run2-cost",
                       "run2-latency", "run2-cold-starts"));
  EXPECT_EQ(Count(charts[2].svg, "<g class=\"series\""), 2u);  // active_gpus, allocated_share
  EXPECT_EQ(Count(charts[3].svg, "<g class=\"series\""), 2u);  // f0, f1
  EXPECT_EQ(Count(charts[7].svg, "<g class=\"series\""), 3u);  // p50, p95, p99
}

TEST(HtmlReportTest, PageIsWellFormedAndOffline) {
  const std::string html = RenderReportHtml(Data(2));
  EXPECT_EQ(XmlError(html), "");
  EXPECT_THAT(html, Not(HasSubstr("http")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_EQ(Count(html, "<svg "), 23u);
  EXPECT_THAT(html, HasSubstr("Sluice report: tiny &lt;exp&gt;"));
  EXPECT_THAT(html, HasSubstr("id=\"run2\""));
}

TEST(HtmlReportTest, ParetoMarksTheNonDominatedRuns) {
  // exclusive (4 GPUs, 1 %) and dilu (2 GPUs, 2 %) are on the front; worse (3, 5 %) is not.
  const std::string svg = RenderParetoSvg(Data(1));
  EXPECT_EQ(XmlError(svg), "");
  EXPECT_THAT(svg, HasSubstr("data-series=\"exclusive\" data-front=\"1\""));
  EXPECT_THAT(svg, HasSubstr("data-series=\"dilu\" data-front=\"1\""));
  EXPECT_THAT(svg, HasSubstr("data-series=\"worse\"><title>"));
  ReportData no_svr = Data(1);
  for (ReportRun& r : no_svr.runs) {
    r.svr.reset();
    for (ReportFunction& f : r.functions) f.svr.reset();
  }
  EXPECT_EQ(RenderParetoSvg(no_svr), "");
}

TEST(HtmlReportTest, ManyFunctionsDrawOnlyTheTopOnes) {
  const std::vector<ReportChart> charts = ReportCharts(Data(50));
  const std::string& instances = charts[3].svg;
  ASSERT_EQ(charts[3].id, "run0-instances");
  EXPECT_EQ(Count(instances, "<g class=\"series\""), static_cast<size_t>(kReportTopFunctions));
  EXPECT_THAT(instances, HasSubstr("top 8 of 50 functions by requests"));
  EXPECT_THAT(instances, HasSubstr("data-series=\"f49\""));  // the most requests
  EXPECT_THAT(instances, Not(HasSubstr("data-series=\"f0\"")));
}

TEST(HtmlReportTest, LongTimelinesAreDownsampled) {
  ReportData d = Data(1);
  for (std::vector<double>& col : d.runs[0].timeline.values) col.assign(10000, 1.0);
  const std::string svg = ReportCharts(d)[2].svg;
  // One polyline per series, each at most kReportMaxPoints points (one space between points).
  const size_t start = svg.find("points=\"");
  const size_t end = svg.find('"', start + 8);
  EXPECT_LE(Count(svg.substr(start, end - start), " ") + 1,
            static_cast<size_t>(kReportMaxPoints));
}

TEST(HtmlReportTest, LoadDirectoriesGetSharesPerInstanceAndNoComparison) {
  ReportData d;
  d.kind = "load";
  d.experiment = "sluice load clf";
  ReportRun r;
  r.policy = "clf";
  r.timeline_file = "clf_timeline.csv";
  r.timeline.columns = {"t_s", "clf_instances", "clf-1_sm_share", "clf-2_sm_share"};
  r.timeline.values = {{0, 1}, {1, 2}, {0.5, 0.6}, {NAN, 0.3}};
  r.functions.push_back({"clf", 10, {{"p50_ms", 1.0}, {"p99_ms", 3.0}}, 1.0, 0.1});
  r.svr = 0.1;
  d.runs = {r};
  std::vector<std::string> ids;
  for (const ReportChart& c : ReportCharts(d)) ids.push_back(c.id);
  EXPECT_THAT(ids, ::testing::ElementsAre("run0-instances", "run0-sm-share", "run0-latency",
                                          "run0-cold-starts"));
  const std::string html = RenderReportHtml(d);
  EXPECT_EQ(XmlError(html), "");
  EXPECT_THAT(html, Not(HasSubstr("Policy comparison")));
  EXPECT_THAT(html, HasSubstr("data-series=\"clf-2\""));
  EXPECT_EQ(RenderParetoSvg(d), "");
}

TEST(HtmlReportTest, WriteReportRoundTripsAndNamesBadFiles) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "html_report_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "summary.json")
      << R"({"experiment": "x", "runs": [{"policy": "p", "workload": "w", "mean_active_gpus": 1,
             "functions": [{"name": "f", "requests": 3, "p50_ms": 1, "svr": 0, "cold_starts": 1}]}]})";
  std::ofstream(dir / "p_w_timeline.csv") << "t_s,active_gpus,f_instances,f_rps\n0,1,1,2\n1,1,1,3\n";
  absl::StatusOr<std::string> path = WriteReport(dir.string());
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, (dir / "report.html").string());
  std::stringstream html;
  html << std::ifstream(*path).rdbuf();
  EXPECT_EQ(XmlError(html.str()), "");
  EXPECT_TRUE(std::filesystem::exists(dir / "pareto.svg"));
  std::ofstream(dir / "p_w_timeline.csv") << "t_s,active_gpus\n0,one\n";
  EXPECT_THAT(WriteReport(dir.string()).status().message(),
              HasSubstr("p_w_timeline.csv:2: field 'active_gpus'"));
}

}  // namespace
}  // namespace sluice::sim
