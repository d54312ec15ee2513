#include "runtime/sdk/kserve.h"

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

TEST(KserveTest, ParsesAFlatAndANestedFp32Input) {
  absl::StatusOr<InferRequest> r = ParseInferRequest(
      R"({"id": "a", "inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32",
                                 "data": [[1, 2], [3, 4.5]]}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->id, "a");
  absl::StatusOr<FloatTensor> t = InputAsFloats(*r, "x");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t->values, (std::vector<float>{1, 2, 3, 4.5f}));
  EXPECT_TRUE(InputAsFloats(*r, "").ok());  // the first input
  EXPECT_FALSE(InputAsFloats(*r, "y").ok());
}

TEST(KserveTest, RejectsMalformedRequestsNamingTheField) {
  struct Case {
    const char* body;
    const char* field;
  };
  const Case cases[] = {
      {"not json", "request"},
      {"[]", "request"},
      {R"({"inputs": []})", "inputs"},
      {R"({"id": 3, "inputs": [{}]})", "id"},
      {R"({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]})", "inputs[0].name"},
      {R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]})",
       "inputs[0].shape"},
      {R"({"inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2]}]})",
       "inputs[0].data"},
      {R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [{}]}]})",
       "inputs[0].data"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<InferRequest> r = ParseInferRequest(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.field), std::string::npos)
        << c.body << " -> " << r.status();
  }
}

TEST(KserveTest, NonNumericDataIsNotAFloatTensor) {
  absl::StatusOr<InferRequest> r = ParseInferRequest(
      R"({"inputs": [{"name": "s", "shape": [1], "datatype": "BYTES", "data": ["hi"]}]})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(InputAsFloats(*r, "s").ok());
}

TEST(KserveTest, BuildsResponses) {
  json out = InferResponse(
      "m", "id7", {Fp32Output("scores", {1, 2}, {0.25f, 0.75f}), Int64Output("class", {1}, {1})});
  EXPECT_EQ(out["model_name"], "m");
  EXPECT_EQ(out["id"], "id7");
  EXPECT_EQ(out["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(out["outputs"][0]["data"][1], 0.75);
  EXPECT_EQ(out["outputs"][1]["data"][0], 1);
  EXPECT_FALSE(InferResponse("m", "", json::array()).contains("id"));
}

}  // namespace
}  // namespace sluice::runtime
