// Tests of ParseWorkloadSpec: every accepted YAML form and every bad-input class, each error
// naming the file, the line and the field.
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sim/workload/arrivals.h"
#include "sim/workload/testing/fixtures.h"

namespace sluice::sim {
namespace {

using ::testing::AllOf;
using testing::FixtureDir;
using ::testing::HasSubstr;
using testing::WriteFixture;

// Parses `yaml` (a document whose `workload:` key holds the spec) as if read from exp.yaml.
absl::StatusOr<WorkloadSpec> Parse(const std::string& yaml, const std::string& base_dir = "") {
  const YAML::Node doc = YAML::Load(yaml);
  return ParseWorkloadSpec(doc["workload"], "exp.yaml", base_dir);
}

TEST(ParseWorkloadTest, SyntheticForms) {
  auto s = Parse("workload: {kind: poisson, rate_rps: 50}");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kind, WorkloadKind::kPoisson);
  EXPECT_EQ(s->rate_rps, 50);
  EXPECT_EQ(s->source_file, "exp.yaml");
  EXPECT_EQ(s->source_line, 1);
  s = Parse("workload:\n  kind: gamma\n  rate_rps: 12.5\n  cv: 4\n  start_offset_s: 30\n");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kind, WorkloadKind::kGamma);
  EXPECT_EQ(s->cv, 4);
  EXPECT_EQ(s->start_offset, absl::Seconds(30));
  s = Parse("workload: {kind: none}");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kind, WorkloadKind::kNone);
}

TEST(ParseWorkloadTest, FileFormsResolveRelativePaths) {
  const std::string dir = FixtureDir();
  WriteFixture(dir, "bursty.txt", "1\n");
  WriteFixture(dir, "trace.csv", "TIMESTAMP\n0\n");
  WriteFixture(dir, "d01.csv.xz", "");  // only the .xz exists: accepted, read at replay time
  auto s = Parse(
      "workload: {kind: rps_series, path: sub/../bursty.txt, scale: 10, spread: poisson}", dir);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->path, dir + "/bursty.txt");
  EXPECT_EQ(s->scale, 10);
  EXPECT_EQ(s->spread, ArrivalSpread::kPoisson);
  s = Parse(
      "workload: {kind: request_trace, path: trace.csv, timestamp_column: T,"
      " prompt_tokens_column: ContextTokens, output_tokens_column: GeneratedTokens, scale: 2}",
      dir);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->timestamp_column, "T");
  EXPECT_EQ(s->prompt_tokens_column, "ContextTokens");
  EXPECT_EQ(s->output_tokens_column, "GeneratedTokens");
  s = Parse("workload: {kind: azure_functions, path: " + dir +
            "/d01.csv, function: abc123, spread: uniform}");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->function_id, "abc123");
  EXPECT_EQ(s->spread, ArrivalSpread::kUniform);
}

struct BadCase {
  std::string yaml;
  std::string want;  // substring of the error, which must also name exp.yaml and the line
};

class BadWorkloadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadWorkloadTest, IsAnInputErrorNamingFileLineAndField) {
  const std::string dir = FixtureDir();
  WriteFixture(dir, "s.txt", "1\n");
  const auto s = Parse(GetParam().yaml, dir);
  ASSERT_FALSE(s.ok()) << GetParam().yaml;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), AllOf(HasSubstr("exp.yaml:"), HasSubstr(GetParam().want)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadWorkloadTest,
    ::testing::Values(
        BadCase{"workload: 5", "exp.yaml:1: field 'workload': expected a map"},
        BadCase{"x: 1", "field 'workload'"},  // absent node
        BadCase{"workload: {rate_rps: 5}", "field 'kind': missing"},
        BadCase{"workload: {kind: zipf}", "field 'kind': unknown kind 'zipf'"},
        BadCase{"workload: {kind: [poisson]}", "field 'kind': expected a string"},
        BadCase{"workload:\n  kind: poisson\n  rate: 5\n", "exp.yaml:3: field 'rate': unknown key"},
        BadCase{"workload: {kind: poisson, rate_rps: 5, cv: 2}", "field 'cv': unknown key"},
        BadCase{"workload: {kind: none, rate_rps: 5}", "field 'rate_rps': unknown key"},
        BadCase{"workload: {kind: poisson}", "field 'rate_rps': missing"},
        BadCase{"workload: {kind: gamma, rate_rps: 5}", "field 'cv': missing"},
        BadCase{"workload:\n  kind: poisson\n  rate_rps: fast\n",
                "exp.yaml:3: field 'rate_rps': expected a finite number, got 'fast'"},
        BadCase{"workload: {kind: poisson, rate_rps: [1, 2]}", "field 'rate_rps': expected"},
        BadCase{"workload: {kind: poisson, rate_rps: .inf}", "field 'rate_rps': expected"},
        BadCase{"workload: {kind: poisson, rate_rps: -1}", "field 'rate_rps': must be >= 0"},
        BadCase{"workload: {kind: gamma, rate_rps: 1, cv: 0}", "field 'cv': must be > 0"},
        BadCase{"workload: {kind: gamma, rate_rps: 1, cv: -2}", "field 'cv': must be > 0"},
        BadCase{"workload: {kind: poisson, rate_rps: 1, start_offset_s: -3}",
                "field 'start_offset_s': must be >= 0"},
        BadCase{"workload: {kind: rps_series, path: s.txt, scale: -1}", "field 'scale'"},
        BadCase{"workload: {kind: request_trace, path: s.txt, scale: 0}", "field 'scale'"},
        BadCase{"workload: {kind: rps_series, path: s.txt, spread: bursty}",
                "field 'spread': unknown spread 'bursty'"},
        BadCase{"workload: {kind: rps_series}", "field 'path': missing"},
        BadCase{"workload: {kind: rps_series, path: ''}", "field 'path': must not be empty"},
        BadCase{"workload: {kind: rps_series, path: nope.txt}", "field 'path': no such file"},
        BadCase{"workload: {kind: request_trace, path: s.txt, timestamp_column: ''}",
                "field 'timestamp_column': must not be empty"},
        BadCase{"workload: {kind: azure_functions, path: s.txt, function: {a: 1}}",
                "field 'function': expected a string"}));

}  // namespace
}  // namespace sluice::sim
