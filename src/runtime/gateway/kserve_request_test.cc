// KServe v2 request validation (field-naming errors, id extraction) and the route table parser.
#include "runtime/gateway/kserve_request.h"

#include <tuple>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "runtime/gateway/kserve_metadata.h"
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

// One input {"name": "x", "datatype": dt, "shape": shape, "data": data}.
std::string Body(const std::string& dt, const std::string& shape, const std::string& data) {
  return absl::StrCat(R"({"inputs": [{"name": "x", "datatype": ")", dt, R"(", "shape": )", shape,
                      R"(, "data": )", data, "}]}");
}

TEST(KserveRequestTest, AcceptsEveryDatatypeAtItsEdges) {
  const std::vector<std::tuple<std::string, std::string, std::string>> ok = {
      {"BOOL", "[2]", "[true, false]"},
      {"UINT8", "[2]", "[0, 255]"},
      {"UINT16", "[1]", "[65535]"},
      {"UINT32", "[1]", "[4294967295]"},
      {"UINT64", "[1]", "[18446744073709551615]"},
      {"INT8", "[2]", "[-128, 127]"},
      {"INT16", "[2]", "[-32768, 32767]"},
      {"INT32", "[2]", "[-2147483648, 2147483647]"},
      {"INT64", "[2]", "[-9223372036854775808, 9223372036854775807]"},
      {"FP16", "[3]", "[65504, -65504, 6e-8]"},
      {"BF16", "[2]", "[1.5, -3e38]"},
      {"FP32", "[2, 2]", "[[1, 2.5], [3, -4]]"},  // nested row-major data
      {"FP64", "[1]", "[1e300]"},
      {"BYTES", "[2]", R"(["", "hello"])"},
      {"FP32", "[0]", "[]"},
      {"FP32", "[0, 9223372036854775807]", "[]"},  // empty, however large the other dims
      {"FP32", "[]", "[7]"},                        // a scalar holds one element
  };
  for (const auto& [dt, shape, data] : ok) {
    const std::string body = Body(dt, shape, data);
    absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(body);
    EXPECT_TRUE(info.ok()) << body << " -> " << info.status();
  }
  absl::StatusOr<KserveRequestInfo> two = ValidateKserveRequest(Body("FP32", "[2, 3]",
                                                                     "[1, 2, 3, 4, 5, 6]"));
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->elements, 6);
}

TEST(KserveRequestTest, RejectsBadTensorsNamingInputAndField) {
  struct Case {
    std::string body, message;
  };
  const std::vector<Case> cases = {
      {Body("FP8", "[1]", "[1]"), "inputs[0].datatype: unknown 'FP8' (BOOL, UINT8"},
      {Body("fp32", "[1]", "[1]"), "inputs[0].datatype: unknown 'fp32'"},
      {Body("FP32", "[-1]", "[1]"), "inputs[0].shape[0]: must be a non-negative integer, not -1"},
      {Body("FP32", "[1.5]", "[1]"), "inputs[0].shape[0]: must be a non-negative integer"},
      {Body("FP32", "[18446744073709551615]", "[1]"),
       "inputs[0].shape[0]: 18446744073709551615 does not fit int64"},
      {Body("FP32", "[4294967296, 4294967296]", "[1]"),
       "inputs[0].shape: element count of [4294967296,4294967296] overflows int64"},
      {Body("FP32", "[3037000500, 3037000500]", "[1]"), "overflows int64"},
      {Body("FP32", "[2, 2]", "[1, 2, 3]"), "inputs[0].data: 3 elements, but shape [2,2] holds 4"},
      {Body("FP32", "[1]", "[1, 2]"), "inputs[0].data: 2 elements, but shape [1] holds 1"},
      {Body("FP32", "[1]", R"(["1"])"), "inputs[0].data[0]: must be a number (FP32)"},
      {Body("FP32", "[1]", "[{}]"), "inputs[0].data[0]: must be a number (FP32)"},
      {Body("FP32", "[1]", "[1e39]"), "outside the finite range of FP32"},
      {Body("FP16", "[2]", "[1, 65520]"),
       "inputs[0].data[1]: 65520 is outside the finite range of FP16"},
      {Body("FP16", "[1]", "[-1e5]"), "outside the finite range of FP16"},
      {Body("BOOL", "[2]", "[true, 1]"), "inputs[0].data[1]: must be true or false (BOOL)"},
      {Body("BOOL", "[1]", R"(["true"])"), "must be true or false (BOOL)"},
      {Body("BYTES", "[1]", "[5]"), "inputs[0].data[0]: must be a string (BYTES)"},
      {Body("BYTES", "[1]", "[null]"), "must be a string (BYTES)"},
      {Body("INT8", "[1]", "[128]"), "128 is outside the range of INT8"},
      {Body("INT8", "[1]", "[1.0]"), "must be an integer (INT8)"},
      {Body("UINT8", "[1]", "[-1]"), "-1 is outside the range of UINT8"},
      {Body("UINT32", "[1]", "[4294967296]"), "outside the range of UINT32"},
      {Body("INT64", "[1]", "[9223372036854775808]"), "outside the range of INT64"},
      {Body("UINT64", "[1]", "[-1]"), "outside the range of UINT64"},
      {Body("FP32", "[1]", "{}"), "inputs[0].data: must be an array"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1]}]})",
       "inputs[0].data: missing (binary tensor data is not supported)"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]},
                      {"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]})",
       "inputs[1].name: duplicate"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
           "outputs": [{"nom": "y"}]})",
       "outputs[0].name: missing"},
      {R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
           "parameters": 3})",
       "parameters: must be an object"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(c.body);
    ASSERT_FALSE(info.ok()) << c.body;
    EXPECT_TRUE(absl::IsInvalidArgument(info.status()));
    EXPECT_NE(info.status().message().find(c.message), std::string::npos)
        << c.body << " -> " << info.status().message();
  }
  // The input is named by its name too.
  absl::StatusOr<KserveRequestInfo> named = ValidateKserveRequest(Body("FP32", "[2]", "[1]"));
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.status().message().find("(input 'x')"), std::string::npos) << named.status();
}

TEST(KserveRequestTest, DeeplyNestedDataIsCountedWithoutRecursion) {
  std::string data = "1";
  for (int i = 0; i < 5000; ++i)
    data = "[" + data + "]";
  absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(Body("INT32", "[1]", data));
  EXPECT_TRUE(info.ok()) << info.status();
}

TEST(KserveMetadataTest, ServerAndModelMetadata) {
  const nlohmann::json server = ServerMetadata();
  EXPECT_EQ(server["name"], "sluice");
  EXPECT_EQ(server["version"], kServerVersion);
  EXPECT_TRUE(server["extensions"].is_array());
  Route r;
  r.name = "f";
  r.kind = "inference";
  r.state = "ready";
  const nlohmann::json m = ModelMetadata(r);
  EXPECT_EQ(m["name"], "f");
  EXPECT_EQ(m["versions"], nlohmann::json::array({"1"}));
  EXPECT_EQ(m["platform"], "sluice_inference");
  EXPECT_TRUE(m["inputs"].is_array());
  EXPECT_TRUE(m["outputs"].is_array());
  EXPECT_FALSE(m.contains("pipeline"));
  r.pipeline = "p";
  r.stage = 1;
  r.stages = 2;
  EXPECT_EQ(ModelMetadata(r)["stage"], 1);
  EXPECT_EQ(PipelineMetadata("p", {"p-s0", "p-s1"})["stages"][1], "p-s1");
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
