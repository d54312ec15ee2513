// `sim run` through RunSimCommand: exit codes, messages on the error stream, nothing on the
// output stream when it fails, --json / --out / --policy / --event-log on the shipped quickstart.
#include "sim/cli/sim_command.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Experiment(const std::string& name) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/experiments/" + name;
}

std::string Quickstart() { return Experiment("quickstart.yaml"); }

struct Result {
  int rc;
  std::string out, err;
};

SimRunOptions Options(const std::string& experiment) {
  SimRunOptions o;
  o.experiment = experiment;
  return o;
}

Result RunCommand(const SimRunOptions& options) {
  std::ostringstream out, err;
  const int rc = RunSimCommand(options, out, err);
  return {rc, out.str(), err.str()};
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SimCommandTest, BadInputExitsTwoWithFileLineField) {
  const std::string path = WriteTemp(
      "bad.yaml",
      "cluster: {nodes: 1, gpu: A100-40GB}\npolicies: [exclusive]\nfunctions:\n  - name: f\n"
      "    model: resnet152\n    slo_ms: -1\n    workload: {kind: poisson, rate_rps: 1}\n");
  const Result r = RunCommand(Options(path));
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ":6: field 'functions[0].slo_ms': must be > 0"));
  EXPECT_EQ(r.out, "");
}

TEST(SimCommandTest, MissingFileAndBadFlagsExitTwo) {
  Result r = RunCommand(Options("/no/such/experiment.yaml"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("/no/such/experiment.yaml"));
  SimRunOptions o = Options(Quickstart());
  o.event_log = true;
  r = RunCommand(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("--event-log needs --out"));
  o = Options(Quickstart());
  o.policies = {"warp-drive"};
  r = RunCommand(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("--policy 'warp-drive': not in the experiment"));
}

TEST(SimCommandTest, ExitCodes) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), 0);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("x")), 2);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("x")), 2);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("x")), 1);
  EXPECT_EQ(ExitCodeFor(absl::PermissionDeniedError("x")), 1);
}

TEST(SimCommandTest, JsonOutAndPolicyFilter) {
  const std::string dir = testing::TempDir() + "/sim_cli_out";
  std::filesystem::remove_all(dir);
  SimRunOptions o = Options(Quickstart());
  o.seed = 3;
  o.json = true;
  o.out_dir = dir;
  o.policies = {"mps-r"};
  o.event_log = true;
  const Result r = RunCommand(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["seed"], 3);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["policy"], "mps-r");
  std::ifstream summary(dir + "/summary.json");
  std::stringstream text;
  text << summary.rdbuf();
  EXPECT_EQ(text.str(), r.out);
  std::ifstream csv(dir + "/mps-r_default_timeline.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_THAT(header, StartsWith("t_s,active_gpus,"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/mps-r_default_events.log"));
}

TEST(SimCommandTest, TableIsTheDefault) {
  SimRunOptions o = Options(Quickstart());
  o.policies = {"exclusive"};
  const Result r = RunCommand(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("experiment quickstart: seed 1"));
  EXPECT_THAT(r.out, HasSubstr("policy exclusive, workload default"));
}

TEST(SimCommandTest, PlacementReplayFilesAreDispatchedByKind) {
  SimRunOptions o = Options(Experiment("dilu-large-scale-small.yaml"));
  o.json = true;
  o.policies = {"exclusive"};
  const Result r = RunCommand(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "placement_replay");
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["policy"], "exclusive");
  o.event_log = true;
  o.out_dir = testing::TempDir() + "/placement_out";
  EXPECT_EQ(RunCommand(o).rc, 2);
}

}  // namespace
}  // namespace sluice::sim
