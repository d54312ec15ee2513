// report.html after `sim run --out` on tiny runs of the shipped quickstart (simulation), a small
// llm_serving file and a placement replay, and `sim plot` redrawing it; `plot` on a missing or
// corrupt directory exits 2 naming the file.
#include "sim/cli/plot_command.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cli/sim_command.h"
#include "sim/report/testing/well_formed.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::XmlError;

std::string Experiment(const std::string& name) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/experiments/" + name;
}

std::string Read(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct Result {
  int rc;
  std::string out, err;
};

Result RunSim(SimRunOptions o) {
  std::ostringstream out, err;
  const int rc = RunSimCommand(o, out, err);
  return {rc, out.str(), err.str()};
}

Result Plot(const SimPlotOptions& o) {
  std::ostringstream out, err;
  const int rc = RunPlotCommand(o, out, err);
  return {rc, out.str(), err.str()};
}

std::string FreshDir(const std::string& name) {
  const std::string dir = testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Golden-ish: the quickstart's two runs give the comparison charts and seven charts per run, the
// page parses as XML and fetches nothing; `plot` redraws the same bytes from the files.
TEST(PlotCommandTest, SimRunOutWritesReportAndPlotRedrawsIt) {
  const std::string dir = FreshDir("plot_quickstart");
  SimRunOptions o;
  o.experiment = Experiment("quickstart.yaml");
  o.out_dir = dir;
  o.policies = {"exclusive", "mps-r"};
  const Result r = RunSim(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("report: " + dir + "/report.html"));
  const std::string html = Read(dir + "/report.html");
  EXPECT_EQ(XmlError(html), "");
  EXPECT_THAT(html, Not(HasSubstr("http")));
  for (const char* run : {"run0-", "run1-"}) {
    for (const char* chart : {"cluster", "instances", "load", "fragmentation", "cost", "latency",
                              "cold-starts"}) {
      EXPECT_EQ(Count(html, std::string("data-chart=\"") + run + chart + "\""), 1u)
          << run << chart;
    }
  }
  EXPECT_EQ(Count(html, "data-chart=\"pareto\""), 1u);
  EXPECT_EQ(Count(html, "<svg "), 2u + 2u * 7u);
  // Instances and load: one line per quickstart function.
  EXPECT_THAT(html, HasSubstr("data-series=\"bert\""));
  EXPECT_THAT(html, HasSubstr("data-series=\"roberta\""));
  const std::string pareto = Read(dir + "/pareto.svg");
  EXPECT_EQ(XmlError(pareto), "");
  EXPECT_EQ(Count(pareto, "<circle"), 2u);

  std::filesystem::remove(dir + "/report.html");
  SimPlotOptions p{dir, dir + "/charts", "qs-"};
  const Result plotted = Plot(p);
  ASSERT_EQ(plotted.rc, 0) << plotted.err;
  EXPECT_EQ(Read(dir + "/report.html"), html);
  EXPECT_THAT(plotted.out, HasSubstr("chart: " + dir + "/charts/qs-pareto.svg"));
  EXPECT_EQ(XmlError(Read(dir + "/charts/qs-run0-cluster.svg")), "");
}

TEST(PlotCommandTest, JsonOutputStaysPureJson) {
  SimRunOptions o;
  o.experiment = Experiment("quickstart.yaml");
  o.out_dir = FreshDir("plot_json");
  o.policies = {"exclusive"};
  o.json = true;
  const Result r = RunSim(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("report:")));
  EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/report.html"));
}

TEST(PlotCommandTest, LlmAndPlacementExperimentsGetReportsToo) {
  const std::string yaml = testing::TempDir() + "/plot_llm.yaml";
  std::ofstream(yaml) << "kind: llm_serving\nduration_s: 20\n"
                         "cluster: {preset: blitzscale-b, nodes: 1}\nfunctions:\n"
                         "  - {name: chat, model: llama2-7b, default_prompt_tokens: 512,\n"
                         "     default_output_tokens: 8, workload: {kind: poisson, rate_rps: 2}}\n"
                         "policies: [serverless-llm, blitzscale]\n";
  SimRunOptions o;
  o.experiment = yaml;
  o.out_dir = FreshDir("plot_llm");
  Result r = RunSim(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string html = Read(o.out_dir + "/report.html");
  EXPECT_EQ(XmlError(html), "");
  EXPECT_EQ(Count(html, "data-chart=\"run1-load\""), 1u);     // tokens/s
  EXPECT_EQ(Count(html, "data-chart=\"run1-latency\""), 1u);  // TTFT / TBT percentiles
  EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/pareto.svg"));

  o.experiment = Experiment("dilu-large-scale-small.yaml");
  o.out_dir = FreshDir("plot_placement");
  o.policies = {"exclusive"};
  r = RunSim(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  html = Read(o.out_dir + "/report.html");
  EXPECT_EQ(XmlError(html), "");
  EXPECT_EQ(Count(html, "data-chart=\"run0-cluster\""), 1u);
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/pareto.svg"));  // no SLOs in a replay
}

TEST(PlotCommandTest, MissingOrCorruptDirectoryExitsTwoNamingTheFile) {
  const std::string dir = FreshDir("plot_bad");
  Result r = Plot({dir, "", ""});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("sluice sim plot: " + dir + ": no such directory"));
  std::filesystem::create_directories(dir);
  r = Plot({dir, "", ""});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/summary.json"));
  std::ofstream(dir + "/summary.json") << "{\"runs\": [";
  r = Plot({dir, "", ""});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/summary.json: field 'summary': not a JSON object"));
  std::ofstream(dir + "/summary.json") << R"({"runs": [{"policy": "p", "workload": "w"}]})";
  std::ofstream(dir + "/p_w_timeline.csv") << "t_s,active_gpus\n0,1,2\n";
  r = Plot({dir, "", ""});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/p_w_timeline.csv:2: field 'row'"));
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace sluice::sim
