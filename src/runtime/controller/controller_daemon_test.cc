// End-to-end tests of the controller daemon against FakeAgent, through its admin and internal
// HTTP APIs: profiling, placement, lazy scaling, drain, wake, delete, restart, unschedulable.
// Waits poll with a generous bound; no assertion depends on how fast anything runs.
#include "runtime/controller/controller_daemon.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/controller/testing/controller_fixture.h"
#include "runtime/controller/testing/fake_agent.h"
#include "runtime/http/http.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST_F(ControllerTest, DeployProfilesOnTheAgentAndStartsMinInstancesWithTheProfile) {
  StartDaemon();
  const http::Response r = Deploy(InferenceSpec("resnet", 1, 3));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["state"], "profiling");
  ASSERT_TRUE(WaitState("resnet", "ready")) << Describe("resnet").dump();

  core::ProfilerConfig capped = options_.profiler;
  capped.max_batch = 8;
  FakeModelRunner runner(model_);
  auto direct = core::Profiler::Create(capped)->ProfileInference(runner, absl::Milliseconds(40));
  ASSERT_TRUE(direct.ok()) << direct.status();
  const json f = Describe("resnet");
  EXPECT_DOUBLE_EQ(f["profile"]["request"].get<double>(), direct->quota.request);
  EXPECT_DOUBLE_EQ(f["profile"]["limit"].get<double>(), direct->quota.limit);
  EXPECT_EQ(f["profile"]["batch"], direct->batch);
  EXPECT_DOUBLE_EQ(f["profile"]["capacity_rps"].get<double>(), direct->throughput);
  EXPECT_EQ(f["profile"]["trials"], direct->trials);
  EXPECT_EQ(f["profile"]["source"], "profiled");
  EXPECT_EQ(agent_->trials(), direct->trials);
  EXPECT_EQ(agent_->quota_puts(), direct->trials);
  EXPECT_THAT(f["spec_yaml"].get<std::string>(), HasSubstr("name: resnet"));

  // The profiling instance (request = limit = 1, restart never) is gone; one serving instance.
  const auto all = agent_->instances();
  ASSERT_GE(all.size(), 2u);
  EXPECT_EQ(all[0].restart, "never");
  EXPECT_NE(all[0].state, "ready");
  ASSERT_TRUE(WaitFor([&] {
    return Route("resnet")["instances"].size() == 1 &&
           Route("resnet")["instances"][0]["state"] == "ready";
  }));
  const json route = Route("resnet");
  EXPECT_EQ(route["max_batch"], direct->batch);
  EXPECT_EQ(route["queue_max"], 256);
  EXPECT_DOUBLE_EQ(route["instances"][0]["request"].get<double>(), direct->quota.request);
  EXPECT_EQ(agent_->Live("resnet"), 1);
  EXPECT_EQ(all.back().restart, "on-failure");
}

TEST_F(ControllerTest, BadSpecsAndBodiesAre400NamingLineAndField) {
  StartDaemon();
  http::Response r = Deploy("name: x\nkind: inference\nslo_ms: -3\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("request:"));
  EXPECT_THAT(r.body, HasSubstr("field '"));
  r = Deploy(InferenceSpec("bad", 1, 3, "bogus: 1\n"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("request:9: field 'bogus'"));
  r = Call("POST", "/internal/v1/load", R"({"functions": [{"name": "a", "rps": -1}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("functions[0].rps"));
  r = Call("POST", "/internal/v1/load", R"({"at_ms": 1})");
  EXPECT_THAT(r.body, HasSubstr("functions"));
  r = Call("POST", "/internal/v1/wake", R"({"nom": "a"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("name"));
  EXPECT_EQ(Call("GET", "/admin/v1/functions/nope").status, 404);
  EXPECT_EQ(Call("GET", "/healthz").status, 200);
}

TEST_F(ControllerTest, DuplicateDeployIsIdempotentOrConflict) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("a", 1, 3)).status, 201);
  EXPECT_EQ(Deploy(InferenceSpec("a", 1, 3)).status, 200);
  const http::Response r = Deploy(InferenceSpec("a", 1, 4));
  EXPECT_EQ(r.status, 409);
  EXPECT_THAT(r.body, HasSubstr("different spec"));
  EXPECT_EQ(Get("/admin/v1/functions")["functions"].size(), 1u);
}

TEST_F(ControllerTest, ScalesOutOnlyAfterPhiOutHighSamplesAndInWithDrain) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("a", 1, 3)).status, 201);
  ASSERT_TRUE(WaitState("a", "ready"));
  const double capacity = Describe("a")["profile"]["capacity_rps"].get<double>();
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("a") == 1; }));
  const int64_t version = Get("/internal/v1/routes")["version"].get<int64_t>();
  for (int k = 1; k < options_.lazy.phi_out; ++k) {
    ReportLoad("a", 1.5 * capacity);
    EXPECT_EQ(RoutedInstances("a"), 1) << "after " << k << " high samples";
  }
  ReportLoad("a", 1.5 * capacity);
  EXPECT_EQ(RoutedInstances("a"), 2);
  EXPECT_GT(Get("/internal/v1/routes")["version"].get<int64_t>(), version);
  EXPECT_EQ(Describe("a")["desired"], 2);
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("a") == 2; }));

  // Low load: scale in once more than phi_in samples are below (n - 1) c.
  for (int k = 0; k <= options_.lazy.phi_in + options_.lazy.phi_out; ++k)
    ReportLoad("a", 0.1);
  EXPECT_EQ(RoutedInstances("a"), 1);
  ASSERT_TRUE(WaitFor([&] { return !ServingDeletes().empty(); }));
  ASSERT_EQ(ServingDeletes().size(), 1u);
  const FakeDelete d = ServingDeletes()[0];
  EXPECT_FALSE(d.routed_at_delete) << "DELETE came before the route dropped instance " << d.id;
  EXPECT_EQ(d.drain_ms, "10000");
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("a") == 1; }));
}

TEST_F(ControllerTest, WakeStartsOneInstanceFromZeroAndCountsACold) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("z", 0, 2)).status, 201);
  ASSERT_TRUE(WaitState("z", "ready"));
  EXPECT_EQ(RoutedInstances("z"), 0);
  EXPECT_EQ(Route("z")["state"], "ready");
  const http::Response r = Call("POST", "/internal/v1/wake", R"({"name": "z"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["started"], true);
  EXPECT_EQ(RoutedInstances("z"), 1);
  EXPECT_EQ(Describe("z")["cold_starts"], 1);
  // A second wake while one is starting starts nothing.
  EXPECT_EQ(json::parse(Call("POST", "/internal/v1/wake", R"({"name": "z"})").body)["started"],
            false);
  EXPECT_THAT(Call("GET", "/metrics").body, HasSubstr("sluice_controller_cold_starts_total"));
}

// A node report the agent wrote before it took a start but delivered after the start's 201
// (a slow agent) must not erase the new instance: it was erased, and the next report, listing
// it, stopped it as an orphan. The instance stays, no DELETE is sent, one cold start.
TEST_F(ControllerTest, AStaleNodeReportDoesNotEraseAJustStartedInstance) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("z", 0, 2)).status, 201);
  ASSERT_TRUE(WaitState("z", "ready"));
  agent_->SetNodeReportDelay(absl::Milliseconds(300));
  absl::SleepFor(absl::Milliseconds(100));  // a poll is in flight, to be answered late
  ASSERT_EQ(Call("POST", "/internal/v1/wake", R"({"name": "z"})").status, 200);
  absl::SleepFor(absl::Milliseconds(1000));  // reports written before the start come back
  agent_->SetNodeReportDelay(absl::ZeroDuration());
  ASSERT_TRUE(WaitFor([&] {
    const json r = Route("z");
    return r["instances"].size() == 1 && r["instances"][0]["state"] == "ready";
  })) << Route("z").dump();
  absl::SleepFor(absl::Milliseconds(100));  // a few more polls
  EXPECT_TRUE(ServingDeletes().empty());
  EXPECT_EQ(agent_->Live("z"), 1);
  EXPECT_EQ(Describe("z")["cold_starts"], 1);
}

TEST_F(ControllerTest, DeleteDrainsInstancesAndForgetsTheFunction) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("d", 2, 3)).status, 201);
  ASSERT_TRUE(WaitState("d", "ready"));
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("d") == 2; }));
  const http::Response r = Call("DELETE", "/admin/v1/functions/d");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Call("GET", "/admin/v1/functions/d").status, 404);
  EXPECT_TRUE(Get("/admin/v1/functions")["functions"].empty());
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("d") == 0; }));
  for (const FakeDelete& d : agent_->deletes())
    EXPECT_FALSE(d.routed_at_delete) << d.id;
  EXPECT_EQ(Call("DELETE", "/admin/v1/functions/d").status, 404);
}

TEST_F(ControllerTest, ScaleOverridesBoundsAndRejectsBadBodies) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("s", 1, 3)).status, 201);
  ASSERT_TRUE(WaitState("s", "ready"));
  http::Response r = Call("PUT", "/admin/v1/functions/s/scale", R"({"min": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["min"], 2);
  EXPECT_EQ(RoutedInstances("s"), 2);
  r = Call("PUT", "/admin/v1/functions/s/scale", R"({"max": "x"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("field 'max'"));
  r = Call("PUT", "/admin/v1/functions/s/scale", R"({"min": 5})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("field 'min'"));
}

TEST_F(ControllerTest, RestartKeepsTheRegistryAndReadoptsInstances) {
  dir_ = absl::StrCat(::testing::TempDir(), "/controller_test_", getpid());
  std::filesystem::create_directories(dir_);
  options_.store_path = dir_ + "/controller.db";
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("keep", 1, 2)).status, 201);
  ASSERT_TRUE(WaitState("keep", "ready"));
  ASSERT_TRUE(WaitFor([&] { return RoutedInstances("keep") == 1; }));
  const json before = Describe("keep");
  const int trials = agent_->trials();
  daemon_->Stop();
  daemon_.reset();

  StartDaemon();
  const json after = Describe("keep");
  EXPECT_EQ(after["state"], "ready");
  EXPECT_EQ(after["profile"], before["profile"]);
  EXPECT_EQ(agent_->trials(), trials) << "profiled again";
  ASSERT_EQ(after["instances"].size(), 1u);
  EXPECT_EQ(after["instances"][0]["id"], before["instances"][0]["id"]);
  EXPECT_TRUE(ServingDeletes().empty());
  EXPECT_EQ(Get("/admin/v1/functions")["functions"].size(), 1u);
  // New instances get fresh ids.
  ASSERT_EQ(Call("PUT", "/admin/v1/functions/keep/scale", R"({"min": 2})").status, 200);
  const json now = Describe("keep");
  ASSERT_EQ(now["instances"].size(), 2u);
  EXPECT_NE(now["instances"][0]["id"], now["instances"][1]["id"]);
}

TEST_F(ControllerTest, NoRoomMarksTheRouteUnschedulable) {
  agent_.reset();
  auto agent = FakeAgent::Start(1, int64_t{16} << 30, model_);
  ASSERT_TRUE(agent.ok());
  agent_ = *std::move(agent);
  options_.agents = {agent_->url()};
  StartDaemon();
  const std::string quota = "quota: {request: 0.6, limit: 0.8}\n";
  ASSERT_EQ(Deploy(InferenceSpec("big", 1, 1, quota)).status, 201);
  ASSERT_TRUE(WaitState("big", "ready"));
  ASSERT_EQ(Deploy(InferenceSpec("late", 0, 1, quota)).status, 201);
  ASSERT_TRUE(WaitState("late", "ready")) << Describe("late").dump();
  EXPECT_EQ(Describe("late")["profile"]["source"], "spec");
  const http::Response r = Call("POST", "/internal/v1/wake", R"({"name": "late"})");
  EXPECT_EQ(json::parse(r.body)["started"], false);
  EXPECT_EQ(Route("late")["state"], "unschedulable");
  EXPECT_THAT(Describe("late")["message"].get<std::string>(), HasSubstr("unschedulable"));
  EXPECT_EQ(Route("big")["state"], "ready");
}

TEST_F(ControllerTest, TrainingStartsItsWorkersOnceProfiled) {
  StartDaemon();
  const http::Response r = Deploy(R"(name: train
kind: training
command: ["./train"]
model: {path: /m}
memory_gib: 2
training: {workers: 2, iterations: 100}
)");
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(WaitState("train", "ready")) << Describe("train").dump();
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("train") == 2; }));
  for (const FakeInstance& i : agent_->instances())
    EXPECT_EQ(i.restart, "never");
  EXPECT_EQ(Describe("train")["profile"]["batch"], 1);
}

}  // namespace
}  // namespace sluice::runtime

namespace sluice::runtime {
namespace {

TEST_F(ControllerTest, UnreachableSloFailsWithTheReasonAndRoutesNothing) {
  StartDaemon();
  // t_exec at batch 1 and 100 % SM is 3.5 ms in the fake model; SLO 2 ms allows only 1 ms.
  std::string spec = InferenceSpec("slow", 1, 2);
  spec.replace(spec.find("slo_ms: 40"), 10, "slo_ms: 2");
  ASSERT_EQ(Deploy(spec).status, 201);
  ASSERT_TRUE(WaitState("slow", "failed"));
  const json f = Describe("slow");
  EXPECT_THAT(f["message"].get<std::string>(), HasSubstr("profiling: "));
  EXPECT_THAT(f["message"].get<std::string>(), HasSubstr("100 % SM"));
  EXPECT_TRUE(f["profile"].is_null());
  EXPECT_EQ(Route("slow")["state"], "failed");
  EXPECT_EQ(RoutedInstances("slow"), 0);
  // The profiling instance was deleted; nothing serves.
  ASSERT_TRUE(WaitFor([&] { return agent_->Live("slow") == 0; }));
  EXPECT_EQ(Call("DELETE", "/admin/v1/functions/slow").status, 200);
}

TEST_F(ControllerTest, ClusterListsTheAgentsGpus) {
  StartDaemon();
  const json c = Get("/admin/v1/cluster");
  ASSERT_EQ(c["nodes"].size(), 1u);
  EXPECT_EQ(c["nodes"][0]["agent"], agent_->url());
  ASSERT_EQ(c["nodes"][0]["gpus"].size(), 2u);
  EXPECT_EQ(c["nodes"][0]["gpus"][1]["uuid"], "EMU-FAKE-1");
  EXPECT_EQ(Call("GET", "/metrics").status, 200);
}

}  // namespace
}  // namespace sluice::runtime
