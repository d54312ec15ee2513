// The controller's pipelines (issue 11) against the FakeAgent: a pipeline spec deploys one
// stage function per stage whose routes carry pipeline/stage/stages; a fake core::PipelineScaler
// (registered under the test-only policy name "test-pipeline": dilu with first-fit placement) gets
// one sample per stage from each load report, its replica deltas start and drain stage
// instances, and the stages' own scalers stay idle; the pipeline's name describes and deletes
// every stage; name clashes are 409; the real `quart` set scales the congested stage most.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/controller/testing/pipeline_fixture.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

TEST_F(ControllerPipelineTest, StagesDeployRouteAndScaleUnderThePipelineScaler) {
  std::shared_ptr<PipelineScript> script = RegisterFakePipelinePolicy();
  StartDaemon();
  const http::Response d = Deploy(PipelineYaml("pp", "test-pipeline"));
  ASSERT_EQ(d.status, 201) << d.body;
  const json deployed = json::parse(d.body);
  EXPECT_EQ(deployed["kind"], "pipeline");
  ASSERT_EQ(deployed["stages"].size(), 3u);
  EXPECT_EQ(deployed["stages"][1]["name"], "pp-s1");
  ASSERT_TRUE(WaitFor([&] { return Describe("pp").value("state", "") == "ready"; }))
      << Describe("pp").dump();
  for (int i = 0; i < 3; ++i) {
    const std::string stage = absl::StrCat("pp-s", i);
    ASSERT_TRUE(WaitOneInstance(stage)) << stage << " " << Describe(stage).dump();
    const json r = Route(stage);
    EXPECT_EQ(r["pipeline"], "pp");
    EXPECT_EQ(r["stage"], i);
    EXPECT_EQ(r["stages"], 3);
    EXPECT_DOUBLE_EQ(r["slo_ms"].get<double>(), 30.0);  // 90 ms end to end over 3 stages
  }
  EXPECT_EQ(Route("pp"), json()) << "the pipeline itself is no function route";

  // The first report makes the scaler (every stage ready) and feeds it one sample per stage.
  LoadAll("pp", 10, 2.5, 12);
  EXPECT_EQ(Describe("pp")["pipeline_scaler"], "fake-pipeline");
  {
    absl::MutexLock lock(&script->mu);
    ASSERT_EQ(script->windows.size(), 1u);
    ASSERT_EQ(script->windows[0].size(), 3u);
    const core::PipelineStageSample& s2 = script->windows[0][2];
    EXPECT_DOUBLE_EQ(s2.arrival_rps, 30);
    EXPECT_DOUBLE_EQ(s2.queue_length, 2);
    EXPECT_DOUBLE_EQ(s2.arrival_cv, 2.5);
    EXPECT_EQ(s2.measured_latency, absl::Milliseconds(12));
    EXPECT_EQ(s2.ready_replicas + s2.starting_replicas, 1);
    ASSERT_EQ(script->traits.size(), 3u);
    EXPECT_EQ(script->traits[1].slo, absl::Milliseconds(30));
    EXPECT_EQ(script->traits[1].max_instances, 3);
    EXPECT_EQ(script->slo, absl::Milliseconds(90));
  }
  // Stage 1 is the key stage: +2 replicas; stage 2 asks for CPU workers (ignored).
  core::PipelineDecision up;
  up.stages.resize(3);
  up.stages[1] = {true, 2, 0};
  up.stages[2] = {false, 0, 1};
  up.key_stages = {1};
  {
    absl::MutexLock lock(&script->mu);
    script->decisions.push_back(up);
  }
  LoadAll("pp", 10, 1, 5);
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("pp-s1") == 3; }));
  EXPECT_EQ(RoutedInstances("pp-s0"), 1);
  EXPECT_EQ(RoutedInstances("pp-s2"), 1);
  // A heavy load on stage 0 alone would make its own lazy scaler (phi_out 2) scale out; the
  // pipeline scaler, which decides nothing now, is the only one asked.
  for (int k = 0; k < 5; ++k)
    ReportLoad("pp-s0", 5000);
  EXPECT_EQ(RoutedInstances("pp-s0"), 1);
  // Scale-in drains through the usual path, never below min.
  core::PipelineDecision down;
  down.stages.resize(3);
  down.stages[1].replica_delta = -5;
  {
    absl::MutexLock lock(&script->mu);
    script->decisions.push_back(down);
  }
  LoadAll("pp", 1, 1, 5);
  EXPECT_TRUE(WaitFor([&] { return RoutedInstances("pp-s1") == 1; }));
  {
    absl::MutexLock lock(&script->mu);
    EXPECT_EQ(script->decides, 3 + 5);
  }
}

// With room for one more replica (one GPU, first fit, limit 0.25 each: three stages hold 0.75)
// and two stages asking for one, the stage with more requests waiting per replica gets it
// (core::ScaleOutOrder, the simulator's order), not the lower stage index.
TEST_F(ControllerPipelineTest, ScaleOutsCompetingForTheLastGpuGoToTheMostCongestedStage) {
  std::shared_ptr<PipelineScript> script = RegisterFakePipelinePolicy();
  ASSERT_NO_FATAL_FAILURE(StartWithAgentOf(1));
  ASSERT_EQ(Deploy(PipelineYaml("pc", "test-pipeline")).status, 201);
  ASSERT_TRUE(WaitFor([&] { return Describe("pc").value("state", "") == "ready"; }))
      << Describe("pc").dump();
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(WaitOneInstance(absl::StrCat("pc-s", i))) << Describe("pc").dump();
  // Settled: one instance per stage on the agent too (nothing left draining on the GPU).
  ASSERT_TRUE(WaitFor([&] {
    for (int i = 0; i < 3; ++i) {
      const std::string stage = absl::StrCat("pc-s", i);
      if (RoutedInstances(stage) != 1 || agent_->Live(stage) != 1)
        return false;
    }
    return true;
  })) << Describe("pc").dump();
  LoadAll("pc", 10, 1, 5);  // makes the scaler
  core::PipelineDecision up;
  up.stages.resize(3);
  up.stages[0].replica_delta = 1;
  up.stages[2].replica_delta = 1;
  {
    absl::MutexLock lock(&script->mu);
    script->decisions.push_back(up);
  }
  LoadAll("pc", 10, 1, 5);  // queued: stage 0 has 0 waiting, stage 2 has 2
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("pc-s2") == 2; })) << Describe("pc").dump();
  EXPECT_EQ(RoutedInstances("pc-s0"), 1);
  EXPECT_EQ(Route("pc-s0")["desired"], 2) << "stage 0 still wants its replica";
}

// The real `quart` set (core/registry, QUART's key-stage scaler and placement; whole GPUs per
// stage replica) on a 6-GPU agent: the congested stage gets the most replicas.
TEST_F(ControllerPipelineTest, QuartScalesTheCongestedStageMost) {
  ASSERT_NO_FATAL_FAILURE(StartWithAgentOf(6));
  std::string spec = PipelineYaml("pz", "quart");
  spec = absl::StrReplaceAll(spec, {{"policy_params: {window_s: 600, phi_out: 2, phi_in: 4}\n",
                                     "policy_params: {period_s: 0.001}\n"}});
  ASSERT_EQ(Deploy(spec).status, 201) << spec;
  ASSERT_TRUE(WaitFor([&] { return Describe("pz").value("state", "") == "ready"; }))
      << Describe("pz").dump();
  for (int i = 0; i < 3; ++i) {
    const std::string stage = absl::StrCat("pz-s", i);
    ASSERT_TRUE(WaitOneInstance(stage)) << Describe(stage).dump();
    EXPECT_DOUBLE_EQ(Route(stage)["instances"][0]["limit"].get<double>(), 1.0) << "whole GPU";
  }
  const double capacity = Describe("pz-s1")["profile"]["capacity_rps"].get<double>();
  ASSERT_GT(capacity, 0);
  for (int k = 0; k < 3; ++k) {
    json fns = json::array();
    for (int i = 0; i < 3; ++i) {
      const bool hot = i == 1;
      fns.push_back({{"name", absl::StrCat("pz-s", i)},
                     {"rps", hot ? 2.5 * capacity : 0.3 * capacity},
                     {"queued", hot ? 200 : 0},
                     {"arrival_cv", 1.0},
                     {"latency_ms", hot ? 2000.0 : 10.0}});
    }
    ASSERT_EQ(
        Call("POST", "/internal/v1/load", json{{"at_ms", 0}, {"functions", fns}}.dump()).status,
        200);
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(Describe("pz")["pipeline_scaler"], "quart");
  const int s0 = RoutedInstances("pz-s0"), s1 = RoutedInstances("pz-s1"),
            s2 = RoutedInstances("pz-s2");
  // The congested stage gets the most replicas (QUART may also grow a neighbour whose
  // M/M/c estimate moves with the key stage's; it never shrinks below min).
  EXPECT_EQ(s1, 3) << "2.5 x one replica's capacity needs its max, 3";
  EXPECT_GE(s1, s0);
  EXPECT_GE(s1, s2);
  std::printf("quart on the platform: replicas per stage after 3 reports: %d %d %d\n", s0, s1, s2);
}

// Cache-aware placement on the platform: the agent's parameter store (GET /agent/v1/params)
// lists stage 1's parameters, so a new stage-1 instance's demand names that agent's node in
// cached_on (QUART's placement prefers it, core/quart/quart_placement.h); the other stages'
// demands name none, and a model the store drops stops being listed.
TEST_F(ControllerPipelineTest, DemandsCarryTheNodesWhoseParameterStoreHoldsTheStage) {
  std::shared_ptr<PipelineScript> script = RegisterFakePipelinePolicy();
  agent_->SetParamsModels({"pc-s1", "unrelated"});
  StartDaemon();
  ASSERT_EQ(Deploy(PipelineYaml("pc", "test-pipeline")).status, 201);
  ASSERT_TRUE(WaitFor([&] { return Describe("pc").value("state", "") == "ready"; }));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(WaitOneInstance(absl::StrCat("pc-s", i)));
  LoadAll("pc", 10, 1, 5);  // makes the pipeline scaler
  // Scale stages 0 and 1 by one each, until the params poll has been seen (it runs with the
  // node poll, every 20 ms here).
  auto scale_up = [&](int stage) {
    core::PipelineDecision up;
    up.stages.resize(3);
    up.stages[stage].replica_delta = 1;
    {
      absl::MutexLock lock(&script->mu);
      script->decisions.push_back(up);
    }
    LoadAll("pc", 10, 1, 5);
  };
  auto last_demand_of = [&](int stage) {
    absl::MutexLock lock(&script->mu);
    for (auto it = script->demands.rbegin(); it != script->demands.rend(); ++it) {
      if (it->pipeline_stage == stage)
        return *it;
    }
    return core::InstanceDemand{};
  };
  scale_up(1);
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("pc-s1") == 2; }));
  const core::InstanceDemand s1 = last_demand_of(1);
  ASSERT_EQ(s1.cached_on.size(), 1u);
  EXPECT_EQ(s1.cached_on[0], core::NodeId(0));
  scale_up(0);
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("pc-s0") == 2; }));
  EXPECT_TRUE(last_demand_of(0).cached_on.empty());
  // The store no longer holds it: the next demand names no node.
  agent_->SetParamsModels({});
  absl::SleepFor(absl::Milliseconds(200));
  scale_up(1);
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("pc-s1") == 3; }));
  EXPECT_TRUE(last_demand_of(1).cached_on.empty());
}

TEST_F(ControllerPipelineTest, NameClashesAre409AndThePipelineNameDeletesEveryStage) {
  StartDaemon();
  ASSERT_EQ(Deploy(PipelineYaml("pq", "dilu")).status, 201);
  // The same pipeline again is idempotent.
  EXPECT_EQ(Deploy(PipelineYaml("pq", "dilu")).status, 200);
  const http::Response plain = Deploy(InferenceSpec("pq", 0, 1));
  EXPECT_EQ(plain.status, 409);
  EXPECT_THAT(plain.body, HasSubstr("'pq' is a pipeline"));
  ASSERT_EQ(Deploy(InferenceSpec("solo", 0, 1)).status, 201);
  EXPECT_THAT(Deploy(PipelineYaml("solo", "dilu")).body, HasSubstr("is not a pipeline"));
  ASSERT_EQ(Deploy(InferenceSpec("pr-s1", 0, 1)).status, 201);
  const http::Response clash = Deploy(PipelineYaml("pr", "dilu"));
  EXPECT_EQ(clash.status, 409);
  EXPECT_THAT(clash.body, HasSubstr("stage function 'pr-s1' exists with a different spec"));
  EXPECT_EQ(Describe("pr-s0").value("name", ""), "") << "nothing deployed on a clash";
  // Without a pipeline scaler in its set (dilu), each stage has its own scaler.
  ASSERT_TRUE(WaitFor([&] { return Describe("pq").value("state", "") == "ready"; }));
  EXPECT_EQ(Describe("pq")["pipeline_scaler"], "");
  EXPECT_NE(Describe("pq-s0")["scaler"], "");
  const http::Response del = Call("DELETE", "/admin/v1/functions/pq");
  ASSERT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(json::parse(del.body)["stages"].size(), 3u);
  EXPECT_EQ(Call("GET", "/admin/v1/functions/pq").status, 404);
  EXPECT_EQ(Call("GET", "/admin/v1/functions/pq-s2").status, 404);
}

}  // namespace
}  // namespace sluice::runtime
