// Placement experiments: the strict loader (every bad-input class with its file:line: field), the
// runs (sweep, fallback, paper numbers, filters), the output formats, determinism, and the shipped
// experiment files (against the published Exclusive peaks when Dilu's lists are present).
#include "sim/placement/placement_experiment.h"

#include <cstdlib>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sim/placement/placement_report.h"
#include "sim/workload/testing/fixtures.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

std::string SourceDir() {
  const char* s = std::getenv("SLUICE_SOURCE_DIR");
  return s != nullptr && *s != '\0' ? s : ".";
}

PlacementRunOptions Only(std::vector<std::string> policies) {
  PlacementRunOptions o;
  o.policies = std::move(policies);
  return o;
}
PlacementRunOptions Seeded(uint64_t seed) {
  PlacementRunOptions o;
  o.seed = seed;
  return o;
}
PlacementRunOptions WithTimeline() {
  PlacementRunOptions o;
  o.keep_timeline = true;
  return o;
}

// A valid experiment; tests replace one of its lines.
constexpr char kBase[] =
    "experiment: t\n"                                                           // 1
    "kind: placement_replay\n"                                                  // 2
    "seed: 3\n"                                                                 // 3
    "cluster: {nodes: 50, gpus_per_node: 4, gpu: {memory_gib: 40}}\n"           // 4
    "instances: {synthetic: {count: 60}}\n"                                     // 5
    "policies: [exclusive, infless-r, {name: dilu, alpha: 0.6, beta: 0.4}]\n"   // 6
    "sensitivity: {policy: dilu, param: gamma, values: [1.0, 2.0]}\n"           // 7
    "paper: {source: s, peak_active_gpus: {synthetic-60: {exclusive: 40}}}\n";  // 8

std::string Replace(absl::string_view from, absl::string_view to) {
  return absl::StrReplaceAll(kBase, {{from, to}});
}

std::string Error(const std::string& yaml) {
  absl::StatusOr<PlacementExperimentConfig> c = ParsePlacementExperiment(yaml, "dir/exp.yaml");
  EXPECT_FALSE(c.ok()) << "parsed:\n" << yaml;
  if (c.ok())
    return "";
  EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
  return std::string(c.status().message());
}

TEST(PlacementConfigTest, ParsesTheBaseFile) {
  absl::StatusOr<PlacementExperimentConfig> c = ParsePlacementExperiment(kBase, "dir/exp.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->experiment, "t");
  EXPECT_EQ(c->seed, 3u);
  EXPECT_EQ(c->cluster.nodes.size(), 50u);
  EXPECT_EQ(c->cluster.nodes[0].gpu.memory, core::Bytes::GiB(40));
  ASSERT_EQ(c->instances.size(), 1u);
  EXPECT_EQ(c->instances[0].name, "synthetic-60");
  ASSERT_EQ(c->policies.size(), 5u);
  EXPECT_EQ(c->policies[3].label, "dilu-gamma-1.0");
  EXPECT_EQ(c->policies[3].params.back().key, "gamma");
  EXPECT_EQ(c->policies[3].params.back().line, 7);
  EXPECT_EQ(c->policies[3].params.size(), 3u);  // alpha, beta kept
  EXPECT_EQ(c->paper_peaks.at("synthetic-60").at("exclusive"), 40);
}

TEST(PlacementConfigTest, EveryBadInputNamesFileLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(kBase) + "extra: 1\n", "dir/exp.yaml:9: field 'extra': unknown field"},
      {Replace("kind: placement_replay", "kind: engine"), "exp.yaml:2: field 'kind': must be"},
      {Replace("kind: placement_replay\n", ""), "field 'kind': required field is missing"},
      {Replace("seed: 3", "seed: -1"), "exp.yaml:3: field 'seed'"},
      {Replace("nodes: 50", "nodes: 0"), "exp.yaml:4: field 'cluster.nodes'"},
      {Replace("gpus_per_node: 4", "gpus_per_node: 65"), "field 'cluster.gpus_per_node'"},
      {Replace("memory_gib: 40", "memory_gib: -40"), "field 'cluster.gpu.memory_gib'"},
      {Replace("memory_gib: 40", "memory: 40"), "field 'cluster.gpu.memory': unknown field"},
      {Replace("count: 60", "count: 0"), "exp.yaml:5: field 'instances.synthetic.count'"},
      {Replace("count: 60", "count: many"), "field 'instances.synthetic.count'"},
      {Replace("{synthetic: {count: 60}}", "{}"), "field 'instances.path': give a path"},
      {Replace("{synthetic: {count: 60}}", "[]"), "field 'instances': must be a source"},
      {Replace("{synthetic: {count: 60}}", "{path: nope.txt}"),
       "exp.yaml:5: field 'instances.path': no such file: dir/nope.txt"},
      {Replace("[exclusive,", "[exclusiv,"), "exp.yaml:6: field 'policies[0].name': unknown"},
      {Replace("alpha: 0.6", "alpha: lots"), "exp.yaml:6: field 'alpha'"},
      {Replace("[exclusive,", "[exclusive, exclusive,"), "duplicate policy label 'exclusive'"},
      {Replace("{name: dilu,", "{label: d,"), "field 'policies[2].name': a policy is a name"},
      {Replace("policy: dilu", "policy: dilu2"), "exp.yaml:7: field 'sensitivity.policy'"},
      {Replace("values: [1.0, 2.0]", "values: []"), "field 'sensitivity.values'"},
      {Replace("values: [1.0, 2.0]", "values: [1.0, 0.5]"), "exp.yaml:7: field 'gamma'"},
      {Replace("param: gamma", "param: bogus"), "exp.yaml:7: field 'bogus'"},
      {Replace("{synthetic-60:", "{synthetic-61:"),
       "exp.yaml:8: field 'paper.peak_active_gpus.synthetic-61': no such workload"},
      {Replace("{exclusive: 40}", "{mps-l: 40}"),
       "field 'paper.peak_active_gpus.synthetic-60.mps-l'"},
      {Replace("{exclusive: 40}", "{exclusive: -4}"), "must be a number >= 0"},
      {Replace("source: s,", "source: s, note: x,"), "field 'paper.note': unknown field"},
      {"kind: [placement_replay\n", "malformed YAML"},
  };
  for (const auto& [yaml, want] : cases)
    EXPECT_THAT(Error(yaml), HasSubstr(want)) << yaml;
}

TEST(PlacementExperimentTest, RunsPoliciesAndSweepWithPaperNumbers) {
  absl::StatusOr<PlacementExperimentConfig> c = ParsePlacementExperiment(kBase, "dir/exp.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<PlacementReport> r = RunPlacementExperiment(*c, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->runs.size(), 5u);
  EXPECT_EQ(r->seed, 3u);
  for (const PlacementRunReport& run : r->runs) {
    EXPECT_EQ(run.workload, "synthetic-60");
    EXPECT_TRUE(run.synthetic);
    EXPECT_EQ(run.result.starts, 60);
    EXPECT_EQ(run.result.failed_placements, 0) << run.policy;
  }
  EXPECT_EQ(r->runs[0].paper_peak_active_gpus, 40.0);
  EXPECT_FALSE(r->runs[1].paper_peak_active_gpus.has_value());
  EXPECT_EQ(r->runs[4].swept_value, "2.0");
  EXPECT_GE(r->runs[0].result.peak_active_gpus, r->runs[2].result.peak_active_gpus);

  absl::StatusOr<PlacementReport> only = RunPlacementExperiment(*c, Only({"dilu"}));
  ASSERT_TRUE(only.ok());
  ASSERT_EQ(only->runs.size(), 3u);  // registry name matches the sweep's runs too
  EXPECT_THAT(RunPlacementExperiment(*c, Only({"tgs"})).status().message(),
              HasSubstr("no policy 'tgs'"));
  absl::StatusOr<PlacementReport> reseeded = RunPlacementExperiment(*c, Seeded(4));
  ASSERT_TRUE(reseeded.ok());
  EXPECT_EQ(reseeded->seed, 4u);
}

TEST(PlacementExperimentTest, FallsBackToSyntheticAndNamesItSo) {
  const std::string dir = testing::FixtureDir();
  const std::string list = testing::WriteFixture(
      dir, "instances-2.txt",
      "{'Time': '2024-06-19 15:44:30', 'Action': 'start', 'Instance': {'service_name': 'a', "
      "'type': 'inference', 'gpu_num': 1, 'sm_requests': 0.2, 'sm_limits': 0.4, 'memory': [3]}}\n");
  // No paper block: it may only name the configured workloads, and these are renamed at run time.
  std::string yaml = Replace("{synthetic: {count: 60}}",
                             "[{path: instances-2.txt}, {path: missing.txt, synthetic: "
                             "{count: 60}}]");
  yaml.resize(yaml.find("paper:"));
  const std::string path = testing::WriteFixture(dir, "exp.yaml", yaml);
  absl::StatusOr<PlacementReport> r = RunPlacementExperiment(path, Only({"exclusive"}));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->runs.size(), 2u);
  EXPECT_EQ(r->runs[0].workload, "instances-2");
  EXPECT_FALSE(r->runs[0].synthetic);
  EXPECT_EQ(r->runs[0].result.peak_active_gpus, 1);
  EXPECT_EQ(r->runs[1].workload, "synthetic-60");
  EXPECT_TRUE(r->runs[1].synthetic);
  (void)list;
}

TEST(PlacementReportTest, JsonKeysTableAndTimeline) {
  absl::StatusOr<PlacementExperimentConfig> c = ParsePlacementExperiment(kBase, "dir/exp.yaml");
  ASSERT_TRUE(c.ok());
  absl::StatusOr<PlacementReport> r = RunPlacementExperiment(*c, WithTimeline());
  ASSERT_TRUE(r.ok());
  const nlohmann::ordered_json j = PlacementReportJson(*r);
  EXPECT_EQ(j["experiment"], "t");
  EXPECT_EQ(j["seed"], 3);
  const nlohmann::ordered_json& run = j["runs"][0];
  std::vector<std::string> keys;
  for (auto it = run.begin(); it != run.end(); ++it)
    keys.push_back(it.key());
  const std::vector<std::string> first = {
      "policy",          "workload", "synthetic", "peak_active_gpus", "paper_peak_active_gpus",
      "mean_active_gpus"};
  EXPECT_TRUE(std::equal(first.begin(), first.end(), keys.begin()));
  EXPECT_EQ(run["paper_peak_active_gpus"], 40.0);
  EXPECT_TRUE(j["runs"][1]["paper_peak_active_gpus"].is_null());
  EXPECT_EQ(j["runs"][3]["sensitivity"]["value"], "1.0");
  EXPECT_EQ(run["failed_placements"], 0);

  std::ostringstream table;
  PrintPlacementReport(*r, table);
  EXPECT_THAT(table.str(), HasSubstr("dilu-gamma-2.0"));
  EXPECT_THAT(table.str(), HasSubstr("synthetic-60*"));
  const std::string csv = PlacementTimelineCsv(r->runs[0]);
  EXPECT_THAT(csv, HasSubstr("t_s,active_gpus,sm_fragmentation"));
  EXPECT_GT(std::count(csv.begin(), csv.end(), '\n'), 10);
  EXPECT_EQ(PlacementTimelineFileName(r->runs[0]), "exclusive_synthetic-60_timeline.csv");
}

TEST(PlacementExperimentTest, ShippedSmallExperimentIsDeterministic) {
  const std::string path = SourceDir() + "/experiments/dilu-large-scale-small.yaml";
  absl::StatusOr<std::string> kind = ReadExperimentKind(path);
  ASSERT_TRUE(kind.ok()) << kind.status();
  EXPECT_EQ(*kind, "placement_replay");
  absl::StatusOr<PlacementReport> a = RunPlacementExperiment(path);
  absl::StatusOr<PlacementReport> b = RunPlacementExperiment(path);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  EXPECT_EQ(a->runs.size(), 9u);
  EXPECT_EQ(PlacementReportJsonText(*a), PlacementReportJsonText(*b));
  for (const PlacementRunReport& run : a->runs) {
    EXPECT_EQ(run.result.failed_placements, 0) << run.policy;
    EXPECT_LE(run.result.peak_active_gpus, a->runs[0].result.peak_active_gpus) << run.policy;
  }
  absl::StatusOr<std::string> other =
      ReadExperimentKind(SourceDir() + "/experiments/quickstart.yaml");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, "");
}

// Exclusive's peak is placement-independent (every instance has its own GPUs), so it must equal
// the published figure exactly when Dilu's lists are there.
TEST(PlacementExperimentTest, ExclusivePeaksMatchThePublishedFigures) {
  const std::string path = SourceDir() + "/experiments/dilu-large-scale.yaml";
  absl::StatusOr<PlacementReport> r = RunPlacementExperiment(path, Only({"exclusive"}));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->runs.size(), 4u);
  if (r->runs[0].synthetic)
    GTEST_SKIP() << "Dilu's instance lists are absent";
  for (const PlacementRunReport& run : r->runs) {
    ASSERT_TRUE(run.paper_peak_active_gpus.has_value()) << run.workload;
    EXPECT_EQ(run.result.peak_active_gpus, *run.paper_peak_active_gpus) << run.workload;
  }
}

}  // namespace
}  // namespace sluice::sim
