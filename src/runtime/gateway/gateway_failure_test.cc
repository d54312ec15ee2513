// GatewayDaemon when things go wrong: unknown function 404, bad bodies 400 naming the field,
// deadlines 504 (queued and in flight, fired before the instance answers), full queues 429 with
// Retry-After, unservable functions 503, and instance failures: retried on the other instance
// (none lost), or 502 naming the instance when no retry is possible.
#include "gtest/gtest.h"

#include "runtime/gateway/testing/gateway_harness.h"

namespace sluice::runtime::testing {
namespace {

using nlohmann::json;

std::string Header(const http::Response& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name)
      return v;
  }
  return "";
}

TEST(GatewayFailureTest, UnknownFunctionIs404AndBadBodiesAre400NamingTheField) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 100, "ready")})}));
  EXPECT_EQ(h.Infer("nope", InferBody("x"))->status, 404);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "body: not valid JSON"},
      {"[1]", "body: must be a JSON object"},
      {"{}", "inputs: missing"},
      {R"({"inputs": []})", "inputs: must be a non-empty array"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})",
       "inputs[0].shape: missing"},
      {R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]})",
       "inputs[0].shape[0]: must be a non-negative integer"},
      {R"({"id": 5, "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
       "id: must be a string"},
  };
  for (const auto& [body, message] : cases) {
    absl::StatusOr<http::Response> r = h.Infer("f", body);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_NE(r->body.find(message), std::string::npos) << body << " -> " << r->body;
  }
  EXPECT_EQ(h.Infer("f", InferBody("x"), -1)->status, 200);
  EXPECT_EQ(a.requests_received(), 1);
}

TEST(GatewayFailureTest, DeadlineFiresWhileTheInstanceIsStillServing) {
  GatewayHarness h;
  FakeInstance a(1);
  a.set_mode(FakeInstance::Mode::kHold);  // never answers until released
  h.SetRoutes(json::array({RouteJson("f", 1, 0, {RouteInstanceJson(a, 100, "ready")})}));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("slow"), 200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 504) << r->body;
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(a.requests_received(), 1);
  a.Release();  // the late answer is dropped, not sent twice
  EXPECT_EQ(h.Metric("sluice_gateway_requests_total{function=\"f\",code=\"504\"}"), 1);
}

TEST(GatewayFailureTest, DeadlineFiresWhileHeldForAColdStart) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 1, 0, {RouteInstanceJson(a, 100, "starting")})}));
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("held"), 150);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 504);
  EXPECT_NE(r->body.find("while queued"), std::string::npos) << r->body;
}

TEST(GatewayFailureTest, FullQueueAnswers429WithRetryAfter) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array(
      {RouteJson("f", 1, 0, {RouteInstanceJson(a, 100, "starting")}, /*queue_max=*/2)}));
  auto first = h.InferAsync("f", InferBody("1"), 3000);
  auto second = h.InferAsync("f", InferBody("2"), 3000);
  ASSERT_TRUE(
      WaitFor([&] { return h.Metric("sluice_gateway_queue_length{function=\"f\"}") == 2; }));
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("3"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(Header(*r, "retry-after"), "1");
  // The held ones are served once the instance is ready: the rejection lost nothing queued.
  h.SetRoutes(
      json::array({RouteJson("f", 1, 0, {RouteInstanceJson(a, 100, "ready")}, /*queue_max=*/2)}));
  EXPECT_EQ(first.get()->status, 200);
  EXPECT_EQ(second.get()->status, 200);
}

TEST(GatewayFailureTest, UnschedulableFunctionAnswers503WithRetryAfter) {
  GatewayHarness h;
  json route = RouteJson("f", 1, 0, json::array());
  route["state"] = "unschedulable";
  h.SetRoutes(json::array({route}));
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(Header(*r, "retry-after"), "1");
}

TEST(GatewayFailureTest, InstanceCrashingMidRequestIsRetriedOnTheOtherNoneLost) {
  GatewayHarness h;
  FakeInstance doomed(1), healthy(2);
  doomed.set_mode(FakeInstance::Mode::kHold);
  h.SetRoutes(json::array({RouteJson(
      "f", 1, 0,
      {RouteInstanceJson(doomed, 1000, "ready"), RouteInstanceJson(healthy, 10, "ready")})}));
  std::vector<std::future<absl::StatusOr<http::Response>>> calls;
  for (int i = 0; i < 2; ++i)
    calls.push_back(h.InferAsync("f", InferBody(absl::StrCat("r", i))));
  ASSERT_TRUE(WaitFor([&] { return doomed.requests_received() == 2; }));
  doomed.Crash();
  for (auto& c : calls) {
    absl::StatusOr<http::Response> r = c.get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["outputs"][0]["data"][0], 2);
  }
  EXPECT_EQ(healthy.requests_received(), 2);
}

TEST(GatewayFailureTest, FailingInstanceWithNoOtherToRetryOnIs502NamingIt) {
  GatewayHarness h;
  FakeInstance broken(9);
  broken.set_mode(FakeInstance::Mode::kFail500);
  h.SetRoutes(json::array({RouteJson("f", 1, 0, {RouteInstanceJson(broken, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502);
  EXPECT_NE(r->body.find("instance 9 failed"), std::string::npos) << r->body;
}

TEST(GatewayFailureTest, RetriesStopAfterMaxRetries) {
  GatewayHarness h(/*max_retries=*/1);
  FakeInstance a(1), b(2), c(3);
  for (FakeInstance* i : {&a, &b, &c})
    i->set_mode(FakeInstance::Mode::kFail500);
  h.SetRoutes(json::array(
      {RouteJson("f", 1, 0,
                 {RouteInstanceJson(a, 100, "ready"), RouteInstanceJson(b, 100, "ready"),
                  RouteInstanceJson(c, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("x"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 502) << r->body;
  EXPECT_EQ(a.requests_received() + b.requests_received() + c.requests_received(), 2);
}

}  // namespace
}  // namespace sluice::runtime::testing
