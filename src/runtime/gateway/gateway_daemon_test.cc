// GatewayDaemon on the serving path, against a fake controller and fake instances over real
// HTTP: health and readiness, batching (max batch and the max-queue-delay flush), capacity-
// weighted dispatch, holding during a cold start (and waking a function with no instance), id
// echo, per-request function errors, load reports and the documented metric families.
#include <algorithm>
#include <numeric>

#include "gtest/gtest.h"

#include "runtime/gateway/testing/gateway_harness.h"

namespace sluice::runtime::testing {
namespace {

using nlohmann::json;

TEST(GatewayDaemonTest, HealthReadinessAndServingOneRequest) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 100, "ready")})}));
  EXPECT_EQ(h.Get("/v2/health/live")->status, 200);
  EXPECT_EQ(h.Get("/v2/health/ready")->status, 200);
  EXPECT_EQ(h.Get("/v2/models/f/ready")->status, 200);
  EXPECT_EQ(h.Get("/v2/models/nope/ready")->status, 404);
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("req-1"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  const json body = json::parse(r->body);
  EXPECT_EQ(body["id"], "req-1");
  EXPECT_EQ(body["outputs"][0]["data"][0], 1);
}

TEST(GatewayDaemonTest, BatchesUpToMaxBatchAndFlushesTheRestAtTheDelay) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 4, 300, {RouteInstanceJson(a, 100, "ready")})}));
  std::vector<std::future<absl::StatusOr<http::Response>>> calls;
  for (int i = 0; i < 10; ++i)
    calls.push_back(h.InferAsync("f", InferBody(absl::StrCat("r", i))));
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<http::Response> r = calls[i].get();
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["id"], absl::StrCat("r", i));  // each caller gets its own
  }
  const std::vector<int> sizes = a.batch_sizes();
  EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), 0), 10);
  EXPECT_LE(*std::max_element(sizes.begin(), sizes.end()), 4);
  EXPECT_LT(sizes.size(), 10u) << "requests arriving together should share batches";
}

TEST(GatewayDaemonTest, ALoneRequestIsSentWhenTheMaxQueueDelayExpires) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 8, 150, {RouteInstanceJson(a, 100, "ready")})}));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("alone"));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok() && r->status == 200);
  EXPECT_GE(waited, std::chrono::milliseconds(150));  // held for the delay, not sent at once
  EXPECT_EQ(a.batch_sizes(), std::vector<int>{1});
}

TEST(GatewayDaemonTest, DispatchIsWeightedByCapacity) {
  GatewayHarness h(/*max_retries=*/2, /*max_batches_per_instance=*/0);
  FakeInstance slow(1), fast(2);
  slow.set_mode(FakeInstance::Mode::kHold);
  fast.set_mode(FakeInstance::Mode::kHold);
  h.SetRoutes(json::array({RouteJson(
      "f", 1, 0, {RouteInstanceJson(slow, 100, "ready"), RouteInstanceJson(fast, 300, "ready")})}));
  std::vector<std::future<absl::StatusOr<http::Response>>> calls;
  for (int i = 0; i < 8; ++i)
    calls.push_back(h.InferAsync("f", InferBody(absl::StrCat("r", i))));
  ASSERT_TRUE(WaitFor([&] { return slow.requests_received() + fast.requests_received() == 8; }));
  // Nothing completes while held, so the picks are fixed: (n+1)/cap keeps fast at 3x slow.
  EXPECT_EQ(slow.requests_received(), 2);
  EXPECT_EQ(fast.requests_received(), 6);
  slow.Release();
  fast.Release();
  for (auto& c : calls)
    EXPECT_EQ(c.get()->status, 200);
}

TEST(GatewayDaemonTest, HoldsDuringColdStartThenServesWhenAnInstanceIsReady) {
  GatewayHarness h;
  FakeInstance a(7);
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 0, "starting")})}));
  EXPECT_EQ(h.Get("/v2/models/f/ready")->status, 503);
  auto call = h.InferAsync("f", InferBody("cold"));
  ASSERT_TRUE(
      WaitFor([&] { return h.Metric("sluice_gateway_queue_length{function=\"f\"}") == 1; }));
  EXPECT_EQ(a.requests_received(), 0);
  EXPECT_TRUE(h.controller.wakes().empty()) << "an instance is starting: no wake needed";
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 0, "ready")})}));
  absl::StatusOr<http::Response> r = call.get();
  ASSERT_TRUE(r.ok() && r->status == 200) << r.status();
  EXPECT_EQ(json::parse(r->body)["outputs"][0]["data"][0], 7);
  EXPECT_EQ(h.Metric("sluice_gateway_cold_starts_total{function=\"f\"}"), 1);
}

TEST(GatewayDaemonTest, WakesAFunctionWithNoInstanceAndServesOnceOneIsReady) {
  GatewayHarness h;
  FakeInstance a(3);
  h.SetRoutes(json::array({RouteJson("f", 4, 0, json::array())}));
  auto call = h.InferAsync("f", InferBody("zero"));
  ASSERT_TRUE(WaitFor([&] { return !h.controller.wakes().empty(); }));
  EXPECT_EQ(h.controller.wakes()[0], "f");
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 50, "ready")})}));
  EXPECT_EQ(call.get()->status, 200);
}

TEST(GatewayDaemonTest, AFunctionErrorFailsOnlyThatRequest) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 2, 200, {RouteInstanceJson(a, 100, "ready")})}));
  auto good = h.InferAsync("f", InferBody("good"));
  auto bad = h.InferAsync("f", InferBody("bad", "bad"));
  EXPECT_EQ(good.get()->status, 200);
  absl::StatusOr<http::Response> r = bad.get();
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("bad input"), std::string::npos) << r->body;
}

TEST(GatewayDaemonTest, AnErrorTheFunctionBlamesOnTheRequestIsA400) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 2, 0, {RouteInstanceJson(a, 100, "ready")})}));
  absl::StatusOr<http::Response> r = h.Infer("f", InferBody("blamed", "shape"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("rejected the request: wrong shape"), std::string::npos) << r->body;
}

TEST(GatewayDaemonTest, ReportsLoadAndExposesTheDocumentedMetricFamilies) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 100, "ready")})}));
  ASSERT_EQ(h.Infer("f", InferBody("m"))->status, 200);
  ASSERT_TRUE(WaitFor([&] { return h.controller.load_reports() >= 2; }));
  const json load = h.controller.last_load();
  ASSERT_TRUE(load.contains("at_ms") && load["functions"].is_array());
  EXPECT_EQ(load["functions"][0]["name"], "f");
  absl::StatusOr<http::Response> m = h.Get("/metrics");
  ASSERT_TRUE(m.ok() && m->status == 200);
  for (const char* family :
       {"sluice_gateway_requests_total{function=\"f\",code=\"200\"} 1",
        "sluice_gateway_request_duration_seconds_bucket", "sluice_gateway_queue_duration_seconds",
        "sluice_gateway_queue_length", "sluice_gateway_batch_size_bucket",
        "sluice_gateway_instances{function=\"f\",state=\"ready\"} 1",
        "sluice_gateway_cold_starts_total",
        "sluice_instance_sm_share{function=\"f\",instance_id=\"1\"}", "sluice_instance_sm_request",
        "sluice_instance_sm_limit"}) {
    EXPECT_NE(m->body.find(family), std::string::npos) << family << "\n" << m->body;
  }
}

}  // namespace
}  // namespace sluice::runtime::testing
