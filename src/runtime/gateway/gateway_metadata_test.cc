// GatewayDaemon's KServe v2 metadata endpoints (GET /v2, /v2/models/{name}, .../versions/{v},
// both .../ready forms, pipelines) and the tensor hardening end to end: a malformed tensor is
// answered 400 naming the input and field and never reaches the instance.
#include "gtest/gtest.h"

#include "runtime/gateway/testing/gateway_harness.h"

namespace sluice::runtime::testing {
namespace {

using nlohmann::json;

json Body(const absl::StatusOr<http::Response>& r) {
  return r.ok() ? json::parse(r->body, nullptr, false) : json();
}

TEST(GatewayMetadataTest, ServerAndModelMetadataAndReadiness) {
  GatewayHarness h;
  FakeInstance a(1);
  json stage0 = RouteJson("p-s0", 1, 0, {RouteInstanceJson(a, 100, "ready")});
  stage0["pipeline"] = "p";
  stage0["stage"] = 0;
  stage0["stages"] = 2;
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 100, "ready")}),
                           RouteJson("cold", 4, 0, json::array()), stage0}));
  absl::StatusOr<http::Response> r = h.Get("/v2");
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  EXPECT_EQ(Body(r)["name"], "sluice");
  EXPECT_TRUE(Body(r)["extensions"].is_array());

  for (const char* path : {"/v2/models/f", "/v2/models/f/versions/1"}) {
    r = h.Get(path);
    ASSERT_TRUE(r.ok() && r->status == 200) << path;
    EXPECT_EQ(Body(r)["name"], "f") << path;
    EXPECT_EQ(Body(r)["versions"], json::array({"1"})) << path;
    EXPECT_TRUE(Body(r)["inputs"].is_array()) << path;
    EXPECT_EQ(h.Get(absl::StrCat(path, "/ready"))->status, 200) << path;
  }
  EXPECT_EQ(h.Get("/v2/models/cold")->status, 200);
  EXPECT_EQ(h.Get("/v2/models/cold/ready")->status, 503);
  EXPECT_EQ(h.Get("/v2/models/cold/versions/1/ready")->status, 503);
  r = h.Get("/v2/models/f/versions/2");
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find("no version '2'"), std::string::npos) << r->body;
  EXPECT_EQ(h.Get("/v2/models/f/versions/2/ready")->status, 404);
  EXPECT_EQ(h.Get("/v2/models/nope")->status, 404);
  EXPECT_EQ(h.Get("/v2/models/nope/ready")->status, 404);

  r = h.Get("/v2/models/p");  // a pipeline: its stages; not ready while stage 1 has no route
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Body(r)["platform"], "sluice_pipeline");
  EXPECT_EQ(h.Get("/v2/models/p/ready")->status, 503);
}

TEST(GatewayMetadataTest, MalformedTensorsAre400AndNeverReachTheInstance) {
  GatewayHarness h;
  FakeInstance a(1);
  h.SetRoutes(json::array({RouteJson("f", 4, 0, {RouteInstanceJson(a, 100, "ready")})}));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP8", "data": [1]}]})",
       "inputs[0].datatype: unknown 'FP8'"},
      {R"({"inputs": [{"name": "x", "shape": [4294967296, 4294967296], "datatype": "FP32",
           "data": [1]}]})",
       "inputs[0].shape: element count of [4294967296,4294967296] overflows int64 (input 'x')"},
      {R"({"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2]}]})",
       "inputs[0].data: 2 elements, but shape [2,2] holds 4 (input 'x')"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP16", "data": [70000]}]})",
       "inputs[0].data[0]: 70000 is outside the finite range of FP16 (input 'x')"},
      {R"({"inputs": [{"name": "b", "shape": [1], "datatype": "BOOL", "data": [0]}]})",
       "inputs[0].data[0]: must be true or false (BOOL) (input 'b')"},
      {R"({"inputs": [{"name": "s", "shape": [1], "datatype": "BYTES", "data": [1]}]})",
       "inputs[0].data[0]: must be a string (BYTES) (input 's')"},
  };
  for (const auto& [body, message] : cases) {
    absl::StatusOr<http::Response> r = h.Infer("f", body);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_NE(r->body.find(message), std::string::npos) << body << " -> " << r->body;
  }
  EXPECT_EQ(a.requests_received(), 0);
  EXPECT_EQ(h.Infer("f", InferBody("ok"))->status, 200);
  EXPECT_EQ(a.requests_received(), 1);
}

}  // namespace
}  // namespace sluice::runtime::testing
