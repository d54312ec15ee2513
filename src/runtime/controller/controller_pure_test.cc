// Tests of the controller's pure parts: state machine, registry records, agent JSON and
// ProfileWith against core::Profiler run directly on the fake agent's model.

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/controller/agent_api.h"
#include "runtime/controller/function_record.h"
#include "runtime/controller/function_state.h"
#include "runtime/controller/profiled_latency.h"
#include "runtime/controller/profiling_job.h"
#include "runtime/controller/testing/fake_agent.h"

namespace sluice::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSpec[] = R"(name: resnet
kind: inference
command: ["./serve", "--port", "${PORT}"]
model: {path: /models/resnet}
slo_ms: 40
memory_gib: 2
batching: {max_batch: 8, max_queue_delay_ms: 5}
autoscaling: {min: 1, max: 3}
env: {A: b}
)";

FunctionSpec Spec(const std::string& text = kSpec) {
  absl::StatusOr<FunctionSpec> s = ParseFunctionSpec(text, "t");
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TEST(FunctionStateTest, NamesRoundTripAndTransitionsFollowTheDocumentedMachine) {
  for (FunctionState s : {FunctionState::kProfiling, FunctionState::kReady, FunctionState::kFailed,
                          FunctionState::kDeleting}) {
    EXPECT_EQ(ParseFunctionState(FunctionStateName(s)), s);
  }
  EXPECT_EQ(ParseFunctionState("warm"), std::nullopt);
  EXPECT_TRUE(CanTransition(FunctionState::kProfiling, FunctionState::kReady));
  EXPECT_TRUE(CanTransition(FunctionState::kProfiling, FunctionState::kFailed));
  EXPECT_TRUE(CanTransition(FunctionState::kReady, FunctionState::kDeleting));
  EXPECT_FALSE(CanTransition(FunctionState::kReady, FunctionState::kProfiling));
  EXPECT_FALSE(CanTransition(FunctionState::kFailed, FunctionState::kReady));
  EXPECT_FALSE(CanTransition(FunctionState::kDeleting, FunctionState::kReady));
}

TEST(FunctionRecordTest, JsonRoundTripKeepsEverything) {
  FunctionRecord r;
  r.spec = Spec();
  r.state = FunctionState::kReady;
  r.profile = ProfileInfo{0.3, 0.6, 4, 120.5, 33.2, 1 << 20, 9, "profiled", 0.5,
                          {{1, 0.2, 7.25}, {4, 0.6, 9.5}}};
  r.max_override = 7;
  r.cold_starts = 3;
  r.training_launched = true;
  absl::StatusOr<FunctionRecord> back = RecordFromJson("functions/resnet", RecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, r);
  EXPECT_EQ(back->min(), 1);
  EXPECT_EQ(back->max(), 7);
}

TEST(FunctionRecordTest, CorruptRecordsAreDataLossNamingTheKey) {
  for (const char* text : {"{", R"({"spec_yaml": "name: x"})", "[]"}) {
    absl::StatusOr<FunctionRecord> r = RecordFromJson("functions/x", text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(r.status().message(), HasSubstr("functions/x"));
  }
  FunctionRecord ok;
  ok.spec = Spec();
  std::string text = RecordToJson(ok);
  const std::string state = R"("state":"profiling")";
  ASSERT_NE(text.find(state), std::string::npos) << text;
  text.replace(text.find(state), state.size(), R"("state":"sleeping")");
  EXPECT_THAT(std::string(RecordFromJson("functions/x", text).status().message()),
              HasSubstr("sleeping"));
}

TEST(AgentApiTest, ParsesNodeStatusWithOptionalFields) {
  absl::StatusOr<NodeReport> n = ParseNodeReport(R"({"node": "node-0", "device": "emulated",
    "gpus": [{"uuid": "EMU-0", "name": "G", "index": 0, "sm_count": 108,
              "memory_bytes": 1000, "tokens_per_period": 500, "period_us": 2000}],
    "instances": [{"id": 3, "function": "f", "gpu": "EMU-0", "port": 7101, "state": "ready",
                   "exit_code": null, "sm_share": 0.4}]})");
  ASSERT_TRUE(n.ok()) << n.status();
  ASSERT_EQ(n->gpus.size(), 1u);
  EXPECT_EQ(n->gpus[0].period, absl::Milliseconds(2));
  ASSERT_EQ(n->instances.size(), 1u);
  EXPECT_EQ(n->instances[0].port, 7101);
  EXPECT_DOUBLE_EQ(n->instances[0].sm_share, 0.4);
  EXPECT_EQ(n->instances[0].restarts, 0);
  EXPECT_EQ(n->instances[0].time_quota, 0.0);  // not reported: the controller keeps its own
  n = ParseNodeReport(R"({"node": "n", "gpus": [], "instances": [{"id": 4, "function": "f",
      "state": "ready", "time_quota": 0.35, "max_batch": 2}]})");
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_DOUBLE_EQ(n->instances[0].time_quota, 0.35);
  EXPECT_EQ(n->instances[0].max_batch, 2);
  absl::StatusOr<NodeReport> bad = ParseNodeReport(R"({"node": "n", "gpus": []})");
  EXPECT_THAT(bad.status().message(), HasSubstr("instances"));
}

TEST(AgentApiTest, StartInstanceBodyCarriesTheSpec) {
  const nlohmann::json j =
      nlohmann::json::parse(StartInstanceBody(Spec(), {17, "EMU-1", 0.3, 0.6, false, 4, {}}));
  EXPECT_EQ(j["id"], 17);
  EXPECT_EQ(j["function"], "resnet");
  EXPECT_EQ(j["kind"], "inference");
  EXPECT_EQ(j["command"][2], "${PORT}");
  EXPECT_EQ(j["env"]["A"], "b");
  EXPECT_EQ(j["gpu"], "EMU-1");
  EXPECT_EQ(j["restart"], "never");
  EXPECT_EQ(j["slo_sensitive"], true);
  EXPECT_EQ(j["mem_limit_bytes"], int64_t{2} << 30);
  EXPECT_EQ(j["model_path"], "/models/resnet");
  EXPECT_EQ(j["max_batch"], 4);
  EXPECT_FALSE(j.contains("gpus"));  // a one-GPU instance: `gpu` alone, as before
  const nlohmann::json wide = nlohmann::json::parse(
      StartInstanceBody(Spec(), {18, "EMU-1", 0.3, 0.6, true, 1, {"EMU-1", "EMU-0"}}));
  EXPECT_EQ(wide["gpu"], "EMU-1");
  EXPECT_EQ(wide["gpus"], (std::vector<std::string>{"EMU-1", "EMU-0"}));
  EXPECT_FALSE(j.contains("time_quota"));  // 1 is the agent's default: a Dilu body is unchanged
  StartInstanceArgs sliced{19, "EMU-0", 0.5, 0.5, true, 2, {}};
  sliced.time_quota = 0.3;
  EXPECT_EQ(nlohmann::json::parse(StartInstanceBody(Spec(), sliced))["time_quota"], 0.3);
}

TEST(AgentApiTest, QuotaBodySendsTheTimeQuotaOnlyWhenGiven) {
  const nlohmann::json trial = nlohmann::json::parse(QuotaBody(0.4, 0.4, true, 100));
  EXPECT_EQ(trial["limit"], 0.4);
  EXPECT_FALSE(trial.contains("time_quota"));
  const nlohmann::json step = nlohmann::json::parse(QuotaBody(0.5, 0.5, true, 100, 1.0));
  EXPECT_EQ(step["time_quota"], 1.0);
}

TEST(AgentApiTest, TrialAnswersAreChecked) {
  absl::StatusOr<core::TrialResult> r =
      ParseTrialResult(R"({"latency_ms": 2.5, "throughput": 400, "memory_bytes": 10})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->latency, absl::Microseconds(2500));
  EXPECT_THAT(ParseTrialResult(R"({"latency_ms": 0, "throughput": 1})").status().message(),
              HasSubstr("latency_ms"));
  EXPECT_THAT(ParseTrialResult(R"({"latency_ms": 1})").status().message(), HasSubstr("throughput"));
}

TEST(ProfileWithTest, MatchesCoreProfilerOnTheSameModelWithTheBatchCapped) {
  FakeModel model;
  FakeModelRunner runner(model);
  core::ProfilerConfig config;  // max_batch 32, capped to the spec's 8
  absl::StatusOr<ProfileInfo> p = ProfileWith(runner, Spec(), config);
  ASSERT_TRUE(p.ok()) << p.status();
  core::ProfilerConfig capped = config;
  capped.max_batch = 8;
  FakeModelRunner direct_runner(model);
  absl::StatusOr<core::Profile> direct =
      core::Profiler::Create(capped)->ProfileInference(direct_runner, absl::Milliseconds(40));
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_DOUBLE_EQ(p->request, direct->quota.request);
  EXPECT_DOUBLE_EQ(p->limit, direct->quota.limit);
  EXPECT_EQ(p->batch, direct->batch);
  EXPECT_LE(p->batch, 8);
  EXPECT_DOUBLE_EQ(p->capacity_rps, direct->throughput);
  EXPECT_EQ(p->source, "profiled");
  EXPECT_GT(p->trials, 1);
}

TEST(ProfileWithTest, SpecQuotaRunsOneTrialAtTheRequest) {
  FunctionSpec s = Spec();
  s.quota = QuotaSpec{0.5, 0.8};
  FakeModel model;
  FakeModelRunner runner(model);
  absl::StatusOr<ProfileInfo> p = ProfileWith(runner, s, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->source, "spec");
  EXPECT_EQ(p->trials, 1);
  EXPECT_EQ(p->batch, 8);
  EXPECT_DOUBLE_EQ(p->request, 0.5);
  EXPECT_DOUBLE_EQ(p->limit, 0.8);
  EXPECT_DOUBLE_EQ(p->capacity_rps, 8 / (model.LatencyMs(0.5, 8) / 1000.0));
}

TEST(ProfileWithTest, KeepsEveryDistinctTrialAndTheSpecTimeQuota) {
  FakeModel model;
  FakeModelRunner runner(model);
  absl::StatusOr<ProfileInfo> p = ProfileWith(runner, Spec(), {});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(static_cast<int>(p->points.size()), p->trials);
  for (const TrialPoint& t : p->points)
    EXPECT_NEAR(t.latency_ms, model.LatencyMs(t.sm_share, t.batch), 1e-3) << t.batch;
  EXPECT_EQ(p->time_quota, 1.0);
  FunctionSpec s = Spec();
  s.quota = QuotaSpec{0.5, 0.5, 0.25};
  p = ProfileWith(runner, s, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->time_quota, 0.25);
  ASSERT_EQ(p->points.size(), 1u);
  EXPECT_EQ(p->points[0].batch, 8);
}

TEST(ProfiledLatencyTest, ReproducesTheTrialsAndScalesByTheTimeQuota) {
  FakeModel model;
  FakeModelRunner runner(model);
  absl::StatusOr<ProfileInfo> p = ProfileWith(runner, Spec(), {});
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<std::unique_ptr<ProfiledLatencyModel>> m = ProfiledLatencyModel::Create(*p);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_NE(*m, nullptr);
  // The trials come back (within the table's monotone smoothing of a sparse search path), and a
  // time quota q divides the q = 1 latency.
  for (const TrialPoint& t : p->points) {
    const absl::Duration full = (*m)->BatchLatency(t.batch, t.sm_share);
    EXPECT_NEAR(absl::ToDoubleMilliseconds(full), t.latency_ms, 0.05 * t.latency_ms)
        << t.batch << " " << t.sm_share;
    for (double q : {0.25, 0.5}) {
      EXPECT_NEAR(absl::ToDoubleMilliseconds((*m)->BatchLatency(t.batch, t.sm_share, q)),
                  absl::ToDoubleMilliseconds(full) / q, 1e-9 * t.latency_ms / q);
    }
  }
  // Monotone non-increasing in q, finite at the clamp.
  const TrialPoint& t = p->points.back();
  EXPECT_GT((*m)->BatchLatency(t.batch, t.sm_share, 0.3),
            (*m)->BatchLatency(t.batch, t.sm_share, 0.6));
  EXPECT_EQ((*m)->BatchLatency(t.batch, t.sm_share, 0.0),
            (*m)->BatchLatency(t.batch, t.sm_share, 0.01));
  // A profile stored before trial points were kept gives no model.
  ProfileInfo old = *p;
  old.points.clear();
  m = ProfiledLatencyModel::Create(old);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, nullptr);
}

TEST(ProfileWithTest, UnreachableSloFails) {
  FunctionSpec s = Spec();
  s.slo_ms = 1.0;  // t_exec at batch 1 and 100 % is 3.5 ms > 0.5 ms
  FakeModelRunner runner(FakeModel{});
  absl::StatusOr<ProfileInfo> p = ProfileWith(runner, s, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace sluice::runtime
