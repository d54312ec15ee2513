// The gateway's pipelines (issue 11) against fake stage instances: a request to the pipeline's
// route passes every stage in order (each stage's outputs are the next stage's inputs) and the
// last stage answers; a stage instance that crashes mid-request is retried on another replica
// of that stage; a stage that fails, a deadline inside a stage and a missing stage route are
// clear errors naming the stage; load reports carry each stage's arrival CV and mean latency;
// route tables with malformed stage fields are rejected naming the field.
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/gateway/route_table.h"
#include "runtime/gateway/testing/gateway_harness.h"

namespace sluice::runtime::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Stage(const std::string& pipeline, int stage, int stages, json instances) {
  json r = RouteJson(absl::StrCat(pipeline, "-s", stage), 4, 0, std::move(instances));
  r["pipeline"] = pipeline;
  r["stage"] = stage;
  r["stages"] = stages;
  return r;
}

std::string Message(const http::Response& r) {
  const json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"].value("message", r.body) : r.body;
}

TEST(GatewayPipelineTest, RequestPassesEveryStageInOrderAndTheLastStageAnswers) {
  GatewayHarness h;
  FakeInstance a(11), b(21), c(31);
  h.SetRoutes(json::array({Stage("p", 2, 3, {RouteInstanceJson(c, 100, "ready")}),
                           Stage("p", 0, 3, {RouteInstanceJson(a, 100, "ready")}),
                           Stage("p", 1, 3, {RouteInstanceJson(b, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("p", InferBody("req-1"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  const json out = json::parse(r->body);
  EXPECT_EQ(out["model_name"], "p");
  EXPECT_EQ(out["id"], "req-1");
  EXPECT_EQ(out["outputs"][0]["data"][0], 31);  // the last stage's answer
  EXPECT_EQ(a.requests_received(), 1);
  EXPECT_EQ(b.requests_received(), 1);
  EXPECT_EQ(c.requests_received(), 1);
  EXPECT_EQ(h.Metric(R"(sluice_gateway_requests_total{function="p",code="200"})"), 1);
  EXPECT_EQ(h.Metric(R"(sluice_gateway_requests_total{function="p-s1",code="200"})"), 1);
  // Stages stay callable on their own; bad bodies are rejected before stage 0.
  EXPECT_EQ(h.Infer("p-s1", InferBody("direct"))->status, 200);
  absl::StatusOr<http::Response> bad = h.Infer("p", "{}");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(a.requests_received(), 1);
}

TEST(GatewayPipelineTest, StageInstanceCrashMidRequestIsRetriedOnAnotherReplica) {
  GatewayHarness h;
  FakeInstance a(11), b1(21), b2(22), c(31);
  b1.set_mode(FakeInstance::Mode::kHold);
  b2.set_mode(FakeInstance::Mode::kHold);
  h.SetRoutes(json::array(
      {Stage("p", 0, 3, {RouteInstanceJson(a, 100, "ready")}),
       Stage("p", 1, 3, {RouteInstanceJson(b1, 100, "ready"), RouteInstanceJson(b2, 100, "ready")}),
       Stage("p", 2, 3, {RouteInstanceJson(c, 100, "ready")})}));
  auto pending = h.InferAsync("p", InferBody("r"));
  ASSERT_TRUE(WaitFor([&] { return b1.requests_received() + b2.requests_received() == 1; }));
  FakeInstance& victim = b1.requests_received() == 1 ? b1 : b2;
  FakeInstance& other = b1.requests_received() == 1 ? b2 : b1;
  other.set_mode(FakeInstance::Mode::kServe);
  victim.Crash();
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  absl::StatusOr<http::Response> r = pending.get();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["outputs"][0]["data"][0], 31);
  EXPECT_EQ(other.requests_received(), 1);
}

TEST(GatewayPipelineTest, AFailedStageEndsTheRequestWithAnErrorNamingTheStage) {
  GatewayHarness h(/*max_retries=*/0);
  FakeInstance a(11), b(21), c(31);
  b.set_mode(FakeInstance::Mode::kFail500);
  h.SetRoutes(json::array({Stage("p", 0, 3, {RouteInstanceJson(a, 100, "ready")}),
                           Stage("p", 1, 3, {RouteInstanceJson(b, 100, "ready")}),
                           Stage("p", 2, 3, {RouteInstanceJson(c, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("p", InferBody("r"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 502);
  EXPECT_THAT(Message(*r), HasSubstr("pipeline 'p' stage 1 ('p-s1') failed: instance 21 failed"));
  EXPECT_EQ(c.requests_received(), 0);
  EXPECT_EQ(h.Metric(R"(sluice_gateway_requests_total{function="p",code="502"})"), 1);
}

TEST(GatewayPipelineTest, TheEndToEndDeadlineFiresInsideAStage) {
  GatewayHarness h;
  FakeInstance a(11), b(21);
  b.set_mode(FakeInstance::Mode::kHold);
  h.SetRoutes(json::array({Stage("p", 0, 2, {RouteInstanceJson(a, 100, "ready")}),
                           Stage("p", 1, 2, {RouteInstanceJson(b, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("p", InferBody("r"), /*timeout_ms=*/300);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 504);
  EXPECT_THAT(Message(*r), HasSubstr("pipeline 'p' stage 1 ('p-s1') failed: deadline of"));
  b.Release();
}

TEST(GatewayPipelineTest, AMissingStageRouteIs503NamingTheStage) {
  GatewayHarness h;
  FakeInstance a(11), c(31);
  h.SetRoutes(json::array({Stage("p", 0, 3, {RouteInstanceJson(a, 100, "ready")}),
                           Stage("p", 2, 3, {RouteInstanceJson(c, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("p", InferBody("r"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 503);
  EXPECT_THAT(Message(*r), HasSubstr("pipeline 'p' has no route for stage 1"));
  EXPECT_EQ(a.requests_received(), 0);
}

TEST(GatewayPipelineTest, LoadReportsCarryEachStagesArrivalCvAndMeanLatency) {
  GatewayHarness h;
  FakeInstance a(11), b(21);
  h.SetRoutes(json::array({Stage("p", 0, 2, {RouteInstanceJson(a, 100, "ready")}),
                           Stage("p", 1, 2, {RouteInstanceJson(b, 100, "ready")})}));
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(h.Infer("p", InferBody("r"))->status, 200);
  json stage1;
  ASSERT_TRUE(WaitFor([&] {
    const json load = h.controller.last_load();
    if (!load.is_object())
      return false;  // no report yet
    for (const json& f : load.value("functions", json::array())) {
      if (f["name"] == "p-s1" && f["arrivals"].get<int>() > 0)
        stage1 = f;
    }
    return !stage1.is_null();
  }));
  EXPECT_TRUE(stage1["arrival_cv"].is_number());
  EXPECT_GE(stage1["arrival_cv"].get<double>(), 0);
  EXPECT_GT(stage1["latency_ms"].get<double>(), 0);
  EXPECT_GT(stage1["answered"].get<int>(), 0);
}

TEST(RouteTablePipelineTest, StageFieldsAreCheckedNamingTheField) {
  const auto parse = [](const std::string& extra) {
    return ParseRouteTable(absl::StrCat(
        R"({"version": 1, "functions": [{"name": "p-s0", "state": "ready")", extra, "}]}"));
  };
  absl::StatusOr<RouteTable> ok = parse(R"(, "pipeline": "p", "stage": 1, "stages": 2)");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->functions[0].pipeline, "p");
  EXPECT_EQ(ok->functions[0].stage, 1);
  EXPECT_EQ(ok->functions[0].stages, 2);
  EXPECT_THAT(parse(R"(, "pipeline": "p", "stage": 2, "stages": 2)").status().message(),
              HasSubstr("functions[0].stage: must be an integer in [0, stages)"));
  EXPECT_THAT(parse(R"(, "pipeline": "p", "stage": 0)").status().message(),
              HasSubstr("functions[0].stages: must be an integer in [1, 64]"));
  EXPECT_THAT(parse(R"(, "pipeline": 3)").status().message(),
              HasSubstr("functions[0].pipeline: must be a string"));
}

}  // namespace
}  // namespace sluice::runtime::testing
