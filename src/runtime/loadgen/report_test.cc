#include "runtime/loadgen/report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<absl::Duration> Ms(std::initializer_list<int> values) {
  std::vector<absl::Duration> out;
  for (int v : values)
    out.push_back(absl::Milliseconds(v));
  return out;
}

TEST(PercentileTest, NearestRank) {
  const std::vector<absl::Duration> v = Ms({50, 10, 40, 20, 30});  // unsorted on purpose
  EXPECT_EQ(Percentile(v, 50), absl::Milliseconds(30));            // ceil(2.5) = 3rd
  EXPECT_EQ(Percentile(v, 20), absl::Milliseconds(10));            // ceil(1.0) = 1st
  EXPECT_EQ(Percentile(v, 21), absl::Milliseconds(20));            // ceil(1.05) = 2nd
  EXPECT_EQ(Percentile(v, 95), absl::Milliseconds(50));
  EXPECT_EQ(Percentile(v, 100), absl::Milliseconds(50));
  EXPECT_EQ(Percentile({}, 99), absl::ZeroDuration());
  std::vector<absl::Duration> hundred;
  for (int i = 1; i <= 100; ++i)
    hundred.push_back(absl::Milliseconds(i));
  EXPECT_EQ(Percentile(hundred, 95), absl::Milliseconds(95));
  EXPECT_EQ(Percentile(hundred, 99), absl::Milliseconds(99));
  EXPECT_EQ(Percentile(hundred, 0.5), absl::Milliseconds(1));
}

Outcome Ok(int ms) {
  return {absl::ZeroDuration(), absl::Milliseconds(ms), 200, ""};
}

TEST(SummarizeTest, SvrCountsFailuresAndSlowAnswers) {
  std::vector<Outcome> outcomes = {Ok(10), Ok(90), Ok(101), Ok(100), Ok(200)};
  outcomes.push_back({absl::ZeroDuration(), absl::Milliseconds(1), 429, ""});
  outcomes.push_back({absl::ZeroDuration(), absl::Milliseconds(1), 503, ""});
  outcomes.push_back({absl::ZeroDuration(), absl::Seconds(10), 0, "timeout"});
  const LoadReport r = Summarize("f", absl::Seconds(5), outcomes, absl::Milliseconds(100));
  EXPECT_EQ(r.sent, 8);
  EXPECT_EQ(r.ok, 5);
  EXPECT_EQ(r.violations, 2 + 3);  // 101 and 200 ms over the SLO; 100 is not; three failures
  EXPECT_DOUBLE_EQ(r.svr, 5.0 / 8.0);
  EXPECT_EQ(r.errors.at("429"), 1);
  EXPECT_EQ(r.errors.at("503"), 1);
  EXPECT_EQ(r.errors.at("timeout"), 1);
  EXPECT_EQ(r.latency.count, 5);
  EXPECT_EQ(r.latency.p50, absl::Milliseconds(100));  // failures are not in the latencies
  EXPECT_EQ(r.latency.max, absl::Milliseconds(200));
}

TEST(SummarizeTest, WithoutSloOnlyFailuresViolate) {
  const LoadReport r = Summarize("f", absl::Seconds(1), {Ok(5000), Ok(1)}, std::nullopt);
  EXPECT_EQ(r.violations, 0);
  EXPECT_DOUBLE_EQ(r.svr, 0.0);
  EXPECT_DOUBLE_EQ(Summarize("f", absl::Seconds(1), {}, std::nullopt).svr, 0.0);
}

const char kFunctions[] = R"({"functions": [
  {"name": "clf", "state": "ready", "cold_starts": 3,
   "instances": [{"id": 1, "state": "ready", "sm_share": 0.42, "request": 0.3, "limit": 0.6},
                 {"id": 2, "state": "starting", "sm_share": 0}]},
  {"name": "echo", "state": "profiling", "instances": []}]})";

TEST(ParseFunctionsSampleTest, ReadsInstancesAndShares) {
  absl::StatusOr<TimelineSample> s = ParseFunctionsSample(kFunctions, absl::Milliseconds(500));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->functions.size(), 2u);
  EXPECT_EQ(s->functions[0].cold_starts, 3);
  ASSERT_EQ(s->functions[0].instances.size(), 2u);
  EXPECT_DOUBLE_EQ(s->functions[0].instances[0].sm_share, 0.42);
  EXPECT_EQ(s->functions[0].instances[1].state, "starting");
  EXPECT_EQ(s->functions[1].state, "profiling");
}

TEST(ParseFunctionsSampleTest, RejectsOtherShapes) {
  EXPECT_FALSE(ParseFunctionsSample("not json", absl::ZeroDuration()).ok());
  EXPECT_FALSE(ParseFunctionsSample(R"({"fns": []})", absl::ZeroDuration()).ok());
  EXPECT_FALSE(
      ParseFunctionsSample(R"({"functions": [{"state": "x"}]})", absl::ZeroDuration()).ok());
}

TEST(ReportTest, JsonAndTextCarryTheSummaryAndTimeline) {
  LoadReport r = Summarize("clf", absl::Seconds(2), {Ok(10), Ok(30)}, absl::Milliseconds(20));
  r.cold_starts = 1;
  r.timeline.push_back(*ParseFunctionsSample(kFunctions, absl::Milliseconds(500)));
  const nlohmann::json j = nlohmann::json::parse(ReportJson(r));
  EXPECT_EQ(j["sent"], 2);
  EXPECT_DOUBLE_EQ(j["svr"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["slo_ms"].get<double>(), 20.0);
  EXPECT_EQ(j["cold_starts"], 1);
  EXPECT_DOUBLE_EQ(j["timeline"][0]["functions"][0]["instances"][0]["sm_share"].get<double>(),
                   0.42);
  const std::string text = ReportText(r);
  EXPECT_THAT(text, HasSubstr("SVR 50.00 %"));
  EXPECT_THAT(text, HasSubstr("cold starts: 1"));
  EXPECT_THAT(text, HasSubstr("2 [0.42 0.00]"));
}

TimelineSample OneInstance(double at_s, int64_t id, double share) {
  FunctionSample f{"clf", "ready", 0, {InstanceSample{id, "ready", share, 0.3, 0.6}}};
  return TimelineSample{absl::Seconds(at_s), {f}};
}

TEST(ReportTest, TextTimelineAveragesEachSecondAndSkipsUnchangedRows) {
  LoadReport r = Summarize("clf", absl::Seconds(4), {Ok(10)}, absl::Milliseconds(20));
  r.timeline = {OneInstance(0.0, 1, 0.3), OneInstance(0.5, 1, 0.3),  // second 0: 0.30
                OneInstance(1.0, 1, 0.3), OneInstance(1.5, 1, 0.3),  // second 1: same, skipped
                OneInstance(2.0, 1, 0.3), OneInstance(2.5, 1, 0.6),  // second 2: mean 0.45
                OneInstance(3.0, 1, 0.45)};                          // last: printed anyway
  const std::string text = ReportText(r);
  EXPECT_THAT(text, HasSubstr("    0.0  1 [0.30]"));
  EXPECT_THAT(text, Not(HasSubstr("    1.0  1 [0.30]")));
  EXPECT_THAT(text, HasSubstr("    2.0  1 [0.45]"));
  EXPECT_THAT(text, HasSubstr("    3.0  1 [0.45]"));
  EXPECT_EQ(nlohmann::json::parse(ReportJson(r))["timeline"].size(), 7u);
}

}  // namespace
}  // namespace sluice::runtime
