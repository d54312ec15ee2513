// The controller under a chosen policy set (spec field `policy:`): a scripted core::HybridScaler
// registered under a test-only name drives vertical and horizontal actions that must reach the
// FakeAgent in order (quota PUTs with time_quota, starts on the chosen GPU, drain before delete),
// survive a controller restart, and skip what the cluster rejects; a non-hybrid set (fast-gs+)
// places with its own quota rule; plain `dilu` sends exactly what it sent before.
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/registry/composed_policy_set.h"
#include "runtime/controller/testing/controller_fixture.h"

namespace sluice::runtime {
namespace {

using core::PodView;
using core::ScalingAction;
using ::testing::HasSubstr;
using Kind = core::ScalingAction::Kind;

// What the test scripts and what the scaler saw. Decide runs on the controller's loop thread.
struct Script {
  using Step = std::function<std::vector<ScalingAction>(const std::vector<PodView>&)>;
  absl::Mutex mu;
  std::deque<Step> steps ABSL_GUARDED_BY(mu);
  std::vector<core::LoadSample> samples ABSL_GUARDED_BY(mu);
  std::vector<std::vector<PodView>> pods ABSL_GUARDED_BY(mu);  // per Decide
  std::vector<core::FunctionTraits> traits ABSL_GUARDED_BY(mu);  // per scaler made

  void Push(Step s) {
    absl::MutexLock lock(&mu);
    steps.push_back(std::move(s));
  }
  std::vector<std::vector<PodView>> Seen() {
    absl::MutexLock lock(&mu);
    return pods;
  }
};

// Each Decide plays the next scripted step (nothing when the script is done).
class ScriptedHybrid final : public core::HybridScaler {
 public:
  explicit ScriptedHybrid(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  std::string_view name() const override { return "scripted"; }
  void Observe(const core::LoadSample& sample) override {
    absl::MutexLock lock(&s_->mu);
    s_->samples.push_back(sample);
  }
  std::vector<ScalingAction> Decide(absl::Time, const std::vector<PodView>& pods,
                                    const core::ClusterState&) override {
    absl::MutexLock lock(&s_->mu);
    s_->pods.push_back(pods);
    if (s_->steps.empty())
      return {};
    Script::Step step = std::move(s_->steps.front());
    s_->steps.pop_front();
    return step(pods);
  }

 private:
  std::shared_ptr<Script> s_;
};

// First GPU with room for the memory and the limit (a test placement, not a policy).
class FirstFit final : public core::PlacementPolicy {
 public:
  std::string_view name() const override { return "first-fit"; }
  absl::StatusOr<std::vector<core::GpuId>> Place(const core::InstanceDemand& d,
                                                 const core::ClusterState& state) override {
    for (const core::GpuState& g : state.gpus()) {
      if (g.memory_free() >= d.memory_per_gpu && g.sum_limit + d.quota.limit <= 1.0 + 1e-9)
        return std::vector<core::GpuId>{g.id};
    }
    return absl::ResourceExhaustedError("no GPU");
  }
};

std::shared_ptr<Script> RegisterScripted() {
  auto script = std::make_shared<Script>();
  core::RegisterPolicy("test-hybrid", [script](std::span<const core::PolicyParam>,
                                               const std::string&) {
    core::PolicyParts parts;
    parts.name = "test-hybrid";
    parts.placement = std::make_unique<FirstFit>();
    parts.quota = [](const core::FunctionTraits& f) { return f.profiled; };
    parts.scaler = [](const core::FunctionTraits&) { return nullptr; };
    parts.controller = [](core::GpuId) { return nullptr; };
    parts.hybrid = [script](const core::FunctionTraits& f) {
      absl::MutexLock lock(&script->mu);
      script->traits.push_back(f);
      return std::make_unique<ScriptedHybrid>(script);
    };
    return absl::StatusOr<std::unique_ptr<core::PolicySet>>(
        std::make_unique<core::ComposedPolicySet>(std::move(parts)));
  });
  return script;
}

class ControllerPolicyTest : public ControllerTest {
 protected:
  std::optional<FakeInstance> Instance(int64_t id) {
    for (const FakeInstance& i : agent_->instances()) {
      if (i.id == id)
        return i;
    }
    return std::nullopt;
  }
  json InstanceStatus(const std::string& f, int64_t id) {
    const json status = Describe(f);
    for (const json& i : status["instances"]) {
      if (i["id"] == id)
        return i;
    }
    return json();
  }
};

TEST_F(ControllerPolicyTest, HybridActionsReachTheAgentInOrderAndSurviveARestart) {
  dir_ = absl::StrCat(::testing::TempDir(), "/controller_policy_test_", getpid());
  std::filesystem::create_directories(dir_);
  options_.store_path = dir_ + "/controller.db";
  std::shared_ptr<Script> script = RegisterScripted();
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("h", 1, 3,
                                 "quota: {request: 0.5, limit: 0.5, time_quota: 0.4}\n"
                                 "policy: test-hybrid\n"))
                .status,
            201);
  ASSERT_TRUE(WaitState("h", "ready")) << Describe("h").dump();
  ASSERT_TRUE(WaitFor([&] {
    const json r = Route("h");
    return r["instances"].size() == 1 && r["instances"][0]["state"] == "ready";
  }));
  // min = 1 came up by the set's placement and quota, time quota included.
  const int64_t first = Route("h")["instances"][0]["id"].get<int64_t>();
  const std::optional<FakeInstance> started = Instance(first);
  ASSERT_TRUE(started.has_value());
  EXPECT_TRUE(started->sent_time_quota);
  EXPECT_DOUBLE_EQ(started->time_quota, 0.4);
  EXPECT_DOUBLE_EQ(started->limit, 0.5);
  const json status = Describe("h");
  EXPECT_EQ(status["policy"], "test-hybrid");
  EXPECT_EQ(status["scaler"], "scripted");
  EXPECT_DOUBLE_EQ(InstanceStatus("h", first)["time_quota"].get<double>(), 0.4);
  {
    absl::MutexLock lock(&script->mu);
    ASSERT_FALSE(script->traits.empty());
    const core::FunctionTraits& t = script->traits.back();
    EXPECT_NE(t.latency, nullptr) << "no latency model from the profile's trial";
    EXPECT_EQ(t.max_batch, 8);
    EXPECT_EQ(t.slo, absl::Milliseconds(40));
    EXPECT_EQ(t.max_instances, 3);
    EXPECT_DOUBLE_EQ(t.profiled.time_quota, 0.4);
  }

  // Step 1: raise the pod's time quota, then add a pod on the other GPU with its own (s, q, b).
  script->Push([](const std::vector<PodView>& pods) {
    const core::GpuId other(1 - pods[0].gpu.value());
    return std::vector<ScalingAction>{
        {Kind::kSetQuota, pods[0].instance, {}, {0.5, 0.5, 0.8}, 1},
        {Kind::kAdd, {}, other, {0.5, 0.5, 0.3}, 2}};
  });
  const int puts_before = static_cast<int>(agent_->quota_put_log().size());
  ReportLoad("h", 50);
  ASSERT_EQ(RoutedInstances("h"), 2);
  ASSERT_TRUE(WaitFor([&] {
    return static_cast<int>(agent_->quota_put_log().size()) == puts_before + 1 &&
           agent_->Live("h") == 2;
  }));
  const FakeQuotaPut put = agent_->quota_put_log().back();
  EXPECT_EQ(put.id, first);
  EXPECT_DOUBLE_EQ(put.limit, 0.5);
  ASSERT_TRUE(put.time_quota.has_value());
  EXPECT_DOUBLE_EQ(*put.time_quota, 0.8);
  const std::vector<FakeInstance> all = agent_->instances();
  const FakeInstance& added = all.back();
  EXPECT_NE(added.gpu, started->gpu);
  EXPECT_DOUBLE_EQ(added.time_quota, 0.3);
  EXPECT_EQ(added.max_batch, 2);
  EXPECT_EQ(added.restart, "on-failure");
  EXPECT_DOUBLE_EQ(InstanceStatus("h", first)["time_quota"].get<double>(), 0.8);
  EXPECT_EQ(InstanceStatus("h", added.id)["batch"], 2);
  {
    absl::MutexLock lock(&script->mu);
    ASSERT_EQ(script->samples.size(), 1u);
    EXPECT_EQ(script->samples[0].rps, 50);
    EXPECT_EQ(script->samples[0].instances, 1);
    ASSERT_EQ(script->pods.size(), 1u);
    ASSERT_EQ(script->pods[0].size(), 1u);
    EXPECT_TRUE(script->pods[0][0].warm);
    EXPECT_DOUBLE_EQ(script->pods[0][0].quota.time_quota, 0.4);
  }
  // The gateway weighs the pods by what their (b, s, q) can serve: more time, more capacity.
  double cap_first = 0, cap_added = 0;
  const json route = Route("h");
  for (const json& i : route["instances"]) {
    (i["id"] == first ? cap_first : cap_added) = i["capacity_rps"].get<double>();
  }
  EXPECT_GT(cap_first, cap_added);

  // Step 2: remove the first pod (drain before delete); an unknown instance and a GPU that does
  // not exist are skipped without reaching the agent.
  script->Push([first](const std::vector<PodView>&) {
    return std::vector<ScalingAction>{
        {Kind::kRemove, core::InstanceId(first), {}, {}, 1},
        {Kind::kSetQuota, core::InstanceId(99999), {}, {0.5, 0.5, 0.9}, 1},
        {Kind::kAdd, {}, core::GpuId(7), {0.5, 0.5, 0.5}, 1}};
  });
  ReportLoad("h", 5);
  EXPECT_EQ(RoutedInstances("h"), 1);
  ASSERT_TRUE(WaitFor([&] { return ServingDeletes().size() == 1; }));
  EXPECT_EQ(ServingDeletes()[0].id, first);
  EXPECT_FALSE(ServingDeletes()[0].routed_at_delete);
  EXPECT_EQ(static_cast<int>(agent_->quota_put_log().size()), puts_before + 1);
  EXPECT_EQ(agent_->instances().size(), all.size());
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("h") == 1; }));

  // A restarted controller keeps the policy and re-adopts the pod with its (s, q, b).
  daemon_->Stop();
  daemon_.reset();
  StartDaemon();
  EXPECT_EQ(Describe("h")["policy"], "test-hybrid");
  ASSERT_EQ(Describe("h")["instances"].size(), 1u);
  EXPECT_DOUBLE_EQ(InstanceStatus("h", added.id)["time_quota"].get<double>(), 0.3);
  ReportLoad("h", 5);
  const std::vector<std::vector<PodView>> seen = script->Seen();
  ASSERT_EQ(seen.back().size(), 1u);
  EXPECT_EQ(seen.back()[0].instance, core::InstanceId(added.id));
  EXPECT_DOUBLE_EQ(seen.back()[0].quota.time_quota, 0.3);
  EXPECT_EQ(seen.back()[0].batch, 2);
}

TEST_F(ControllerPolicyTest, AQuotaTheClusterRejectsIsSkippedAndNotSent) {
  std::shared_ptr<Script> script = RegisterScripted();
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("r", 1, 2, "quota: {request: 0.5, limit: 0.5}\n"
                                            "policy: test-hybrid\n"))
                .status,
            201);
  ASSERT_TRUE(WaitState("r", "ready"));
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("r") == 1; }));
  script->Push([](const std::vector<PodView>& pods) {
    return std::vector<ScalingAction>{
        {Kind::kSetQuota, pods[0].instance, {}, {0.5, 0.5, 0.0}, 1},   // invalid q
        {Kind::kAdd, {}, pods[0].gpu, {0.5, 0.5, 1.0}, 1},              // fits beside it
        {Kind::kAdd, {}, pods[0].gpu, {0.5, 0.5, 1.0}, 1}};             // max = 2 reached
  });
  ReportLoad("r", 1);
  EXPECT_EQ(RoutedInstances("r"), 2);
  EXPECT_EQ(Describe("r")["desired"], 2);
  absl::SleepFor(absl::Milliseconds(100));
  const int64_t serving = Route("r")["instances"][0]["id"].get<int64_t>();
  for (const FakeQuotaPut& put : agent_->quota_put_log())
    EXPECT_NE(put.id, serving) << "the invalid quota reached the agent";
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("r") == 2; }));
  for (const FakeInstance& i : agent_->instances())
    EXPECT_FALSE(i.sent_time_quota) << i.id;  // q = 1 is the agent's default: not sent
}

TEST_F(ControllerPolicyTest, AHorizontalSetRunsItsOwnQuotaAndDiluSendsWhatItAlwaysSent) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("fg", 1, 2,
                                 "quota: {request: 0.4, limit: 0.4}\npolicy: fast-gs+\n"
                                 "policy_params: {time_quota: 0.5}\n"))
                .status,
            201);
  ASSERT_EQ(Deploy(InferenceSpec("d", 1, 2, "quota: {request: 0.3, limit: 0.4}\n")).status, 201);
  ASSERT_TRUE(WaitState("fg", "ready")) << Describe("fg").dump();
  ASSERT_TRUE(WaitState("d", "ready")) << Describe("d").dump();
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("fg") == 1 && agent_->Live("d") == 1; }));
  const json fg = Describe("fg");
  EXPECT_EQ(fg["policy"], "fast-gs+");
  EXPECT_EQ(fg["policy_params"]["time_quota"], "0.5");
  EXPECT_EQ(fg["scaler"], "reactive");
  EXPECT_EQ(Describe("d")["policy"], "dilu");
  EXPECT_EQ(Describe("d")["scaler"], "dilu-lazy");
  for (const FakeInstance& i : agent_->instances()) {
    if (i.restart != "on-failure")
      continue;  // profiling instances
    if (i.function == "fg") {  // fast-gs+ folds its time quota into the share: 0.4 x 0.5
      EXPECT_DOUBLE_EQ(i.request, 0.2);
      EXPECT_DOUBLE_EQ(i.limit, 0.2);
    } else {
      EXPECT_FALSE(i.sent_time_quota);
      EXPECT_DOUBLE_EQ(i.request, 0.3);
      EXPECT_DOUBLE_EQ(i.limit, 0.4);
    }
  }
}

// The real HAS-GPU set (core/hasgpu), not a scripted one: a burst far above what the pod serves
// must reach the agent as HAS-GPU actions (a live time-quota step and/or a new pod), every quota
// the agent sees a valid (s, q).
TEST_F(ControllerPolicyTest, HasGpuPolicyScalesThroughTheAgent) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("hg", 1, 4,
                                 "quota: {request: 0.5, limit: 0.5, time_quota: 0.3}\n"
                                 "policy: has-gpu\n"
                                 // The fake trial takes 25.2 ms against a 40 ms SLO: the default
                                 // slo_fraction (0.5) would admit no configuration.
                                 "policy_params: {slo_fraction: 0.9}\n"))
                .status,
            201);
  ASSERT_TRUE(WaitState("hg", "ready")) << Describe("hg").dump();
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("hg") == 1; }));
  const json status = Describe("hg");
  EXPECT_EQ(status["policy"], "has-gpu");
  EXPECT_EQ(status["scaler"], "has-gpu");
  const int puts_before = static_cast<int>(agent_->quota_put_log().size());
  for (int i = 0; i < 5; ++i) {
    ReportLoad("hg", 5000);
  }
  ASSERT_TRUE(WaitFor([&] {
    return static_cast<int>(agent_->quota_put_log().size()) > puts_before ||
           agent_->Live("hg") > 1;
  })) << Describe("hg").dump();
  for (const FakeInstance& i : agent_->instances()) {
    if (i.function != "hg" || i.restart != "on-failure")
      continue;  // profiling instances
    EXPECT_GT(i.time_quota, 0);
    EXPECT_LE(i.time_quota, 1);
    EXPECT_GT(i.limit, 0);
    EXPECT_LE(i.limit, 1);
  }
}

TEST_F(ControllerPolicyTest, UnknownPolicyOrParamIsA400NamingLineAndField) {
  StartDaemon();
  http::Response r = Deploy(InferenceSpec("x", 1, 2, "policy: has-gpuu\n"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("request:9: field 'policy': unknown policy 'has-gpuu' (known: "));
  r = Deploy(InferenceSpec("x", 1, 2, "policy: fast-gs+\npolicy_params:\n  keep_alive: 3\n"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("request:11: field 'keep_alive'"));
  EXPECT_TRUE(Get("/admin/v1/functions")["functions"].empty());
}

}  // namespace
}  // namespace sluice::runtime
