// `sim profile` through RunProfileCommand: the JSON keys and values (the same as
// core::ProfileModel), the text report, and exit code 2 with a message for bad input.
#include "sim/cli/profile_command.h"

#include <sstream>
#include <string>

#include "core/dilu/perf_trial_runner.h"
#include "core/perf/perf_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int rc;
  std::string out, err;
};

Result Profile(const SimProfileOptions& o) {
  std::ostringstream out, err;
  const int rc = RunProfileCommand(o, out, err);
  return {rc, out.str(), err.str()};
}

SimProfileOptions Options(const std::string& model, const std::string& kind, double slo_ms) {
  SimProfileOptions o;
  o.model = model;
  o.kind = kind;
  o.slo_ms = slo_ms;
  return o;
}

core::Profile Want(const std::string& model, core::FunctionKind kind, absl::Duration slo) {
  const std::unique_ptr<core::PerfModel> perf = core::PerfModel::BuiltIn();
  return *core::ProfileModel(*core::Profiler::Create({}), **perf->Find(model), kind, slo);
}

TEST(ProfileCommandTest, JsonHasTheChosenQuotaBatchTrialsAndLog) {
  SimProfileOptions o = Options("roberta-large", "inference", 100);
  o.json = true;
  const Result r = Profile(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const char* key : {"model", "kind", "method", "slo_ms", "profiled_slo_ms", "request",
                          "limit", "batch", "trials", "capacity_rps", "log"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  const core::Profile want =
      Want("roberta-large", core::FunctionKind::kInference, absl::Milliseconds(100));
  EXPECT_EQ(j["request"], want.quota.request);
  EXPECT_EQ(j["limit"], want.quota.limit);
  EXPECT_EQ(j["batch"], want.batch);
  EXPECT_EQ(j["trials"], want.trials);
  EXPECT_EQ(j["method"], "hgs");
  ASSERT_EQ(j["log"].size(), static_cast<size_t>(want.trials));
  for (const char* key : {"sm_share", "batch", "latency_ms", "throughput"}) {
    EXPECT_TRUE(j["log"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["log"][0]["batch"], 1);  // HGS starts at IBS 1

  o.method = "traversal";
  const nlohmann::json t = nlohmann::json::parse(Profile(o).out);
  EXPECT_GT(t["trials"].get<int>(), want.trials);
}

TEST(ProfileCommandTest, TrainingAndLlm) {
  SimProfileOptions train = Options("resnet152", "training", 100);
  train.json = true;
  const Result r = Profile(train);
  ASSERT_EQ(r.rc, 0) << r.err;
  const core::Profile want =
      Want("resnet152", core::FunctionKind::kTraining, absl::ZeroDuration());
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["request"], want.quota.request);
  EXPECT_EQ(j["limit"], want.quota.limit);
  EXPECT_EQ(j["method"], "binary-search");
  train.json = false;
  EXPECT_THAT(Profile(train).out,
              StartsWith("model resnet152 (training), binary search at 80 % / 100 % of "
                         "exclusive throughput\nrequest 0.50  limit 0.87  batch 1  trials"));

  SimProfileOptions llm = Options("llama2-7b", "llm", 6400);
  llm.output_tokens = 64;
  const Result text = Profile(llm);
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_THAT(text.out,
              StartsWith("model llama2-7b (llm), method hgs, SLO 100 ms per output token"));
  EXPECT_THAT(text.out, HasSubstr("trial sm_share  batch  latency_ms   throughput\n"));
}

TEST(ProfileCommandTest, PinnedBatchIsKept) {
  SimProfileOptions o = Options("bert-base", "", 100);
  o.batch = 2;
  o.json = true;
  const Result r = Profile(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["batch"], 2);
  for (const auto& t : j["log"]) EXPECT_EQ(t["batch"], 2);
}

TEST(ProfileCommandTest, BadInputExitsTwo) {
  Result r = Profile(Options("resnet9000", "inference", 100));
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, StartsWith("sluice sim profile: "));
  EXPECT_THAT(r.err, HasSubstr("resnet9000"));
  EXPECT_EQ(r.out, "");
  r = Profile(Options("llama2-7b", "inference", 100));
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("is an LLM; use --kind llm"));
  r = Profile(Options("roberta-large", "inference", 0.5));
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("no SM share meets 0.5 x the SLO"));
  SimProfileOptions o = Options("resnet152", "training", 100);
  o.method = "traversal";
  EXPECT_EQ(Profile(o).rc, 2);
}

}  // namespace
}  // namespace sluice::sim
