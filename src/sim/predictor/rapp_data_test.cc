// rapp_data without the data: experiments that name no rapp/ model never read it, and the data
// path follows $SLUICE_DATA_DIR.
#include "sim/predictor/rapp_data.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

TEST(RappDataTest, NoRappNameReadsNothing) {
  ::setenv("SLUICE_DATA_DIR", "/nonexistent-dir", 1);
  core::PerfModel perf;
  EXPECT_TRUE(AddRappModelsNamedIn("functions:\n  - model: resnet152\n", perf).ok());
  EXPECT_TRUE(perf.names().empty());
  EXPECT_EQ(RappDataPath(), "/nonexistent-dir/rapp-hasgpu-v100-sm-quota-profiles/"
                            "rapp_latency_sm_quota_batch.csv");
  absl::Status s = AddRappModelsNamedIn("model: rapp/resnet50", perf);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("SLUICE_DATA_DIR"));
  ::unsetenv("SLUICE_DATA_DIR");
}

TEST(RappDataTest, PointsByCanonicalName) {
  std::vector<core::ProfilePoint> pts = {{"mobilenet_v3_large", 1, 1, 1, 0.01, 0},
                                         {"resnet50", 1, 1, 1, 0.02, 0}};
  EXPECT_EQ(PointsOf(pts, "MOBILENET-V3-LARGE").size(), 1u);
  EXPECT_EQ(PointsExcept(pts, "resnet50").size(), 1u);
  EXPECT_EQ(ModelNames(pts), (std::vector<std::string>{"mobilenet_v3_large", "resnet50"}));
  EXPECT_EQ(PredictorFor(pts, "vgg16").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::sim
