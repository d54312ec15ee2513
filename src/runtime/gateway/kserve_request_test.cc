// KServe v2 request validation (field-naming errors, id extraction) and the route table parser.
#include "runtime/gateway/kserve_request.h"

#include "gtest/gtest.h"

#include "runtime/gateway/route_table.h"

namespace sluice::runtime {
namespace {

TEST(KserveRequestTest, AcceptsAValidBodyAndReadsItsId) {
  const std::string body =
      R"({"id": "a1", "inputs": [{"name": "x", "shape": [2], "datatype": "FP32",
          "data": [1, 2]}]})";
  absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(body);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->id, "a1");
  nlohmann::json response = {{"outputs", nlohmann::json::array()}};
  EchoRequestId(info->id, response);
  EXPECT_EQ(response["id"], "a1");
}

TEST(KserveRequestTest, NamesTheBadField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]})", "inputs[0].name"},
      {R"({"inputs": [{"name": "x", "shape": [1], "data": [1]}]})", "inputs[0].datatype"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32"}]})", "inputs[0].data"},
      {R"({"inputs": [{"name": "x", "shape": "1", "datatype": "FP32", "data": [1]}]})",
       "inputs[0].shape"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}, 3]})",
       "inputs[1]"},
      {R"({"inputs": {}})", "inputs"},
  };
  for (const auto& [body, field] : cases) {
    absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(body);
    ASSERT_FALSE(info.ok()) << body;
    EXPECT_EQ(info.status().message().substr(0, field.size() + 1), field + ":") << info.status();
  }
}

TEST(RouteTableTest, ParsesRoutesWithDefaults) {
  absl::StatusOr<RouteTable> t = ParseRouteTable(R"({"version": 3, "functions": [
      {"name": "f", "state": "ready", "max_batch": 4, "max_queue_delay_ms": 5,
       "instances": [{"id": 1, "url": "127.0.0.1:7101", "state": "ready", "capacity_rps": 50,
                      "request": 0.3, "limit": 0.6, "sm_share": 0.4}]},
      {"name": "g", "state": "failed"}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->version, 3);
  ASSERT_EQ(t->functions.size(), 2u);
  const Route& f = t->functions[0];
  EXPECT_EQ(f.max_batch, 4);
  EXPECT_EQ(f.max_queue_delay, absl::Milliseconds(5));
  EXPECT_EQ(f.queue_max, 256);
  EXPECT_EQ(f.timeout, absl::Seconds(30));
  ASSERT_EQ(f.instances.size(), 1u);
  EXPECT_EQ(f.instances[0].capacity_rps, 50);
  EXPECT_TRUE(t->functions[1].Unservable());
}

TEST(RouteTableTest, AcceptsTheControllersNullsAndFractionalMilliseconds) {
  absl::StatusOr<RouteTable> t = ParseRouteTable(R"({"version": 1, "functions": [
      {"name": "f", "kind": "inference", "state": "ready", "slo_ms": null, "max_batch": 4,
       "max_queue_delay_ms": 2.5, "queue_max": 16, "timeout_ms": 1500.0, "desired": 0,
       "instances": []}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->functions[0].max_queue_delay, absl::Microseconds(2500));
  EXPECT_EQ(t->functions[0].timeout, absl::Milliseconds(1500));
  EXPECT_EQ(t->functions[0].slo_ms, 0);
}

TEST(RouteTableTest, RejectsMalformedTablesNamingTheField) {
  EXPECT_FALSE(ParseRouteTable("nope").ok());
  absl::StatusOr<RouteTable> t = ParseRouteTable(
      R"({"version": 1, "functions": [{"name": "f", "state": "ready", "max_batch": 0}]})");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("functions[0].max_batch"), std::string::npos) << t.status();
  t = ParseRouteTable(R"({"functions": [{"name": "f", "state": "ready",
                                         "instances": [{"id": 1, "state": "ready"}]}]})");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("functions[0].instances[0].url: missing"), std::string::npos)
      << t.status();
}

}  // namespace
}  // namespace sluice::runtime
