#include "core/perf/profile_parsers.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

MATCHER_P2(ErrorAt, where, field, "") {
  return arg.status().code() == absl::StatusCode::kInvalidArgument &&
         arg.status().message().find(where) != absl::string_view::npos &&
         arg.status().message().find(field) != absl::string_view::npos;
}

TEST(ProfileParsersTest, Dilu) {
  auto r = ParseDiluProfile(
      "1.000000,10.000000,0.016135,61.975324\n\n"
      "32.000000,100.000000,0.199809,160.152842\r\n",
      "bs_sm_bert_base.csv", "bert-base");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].model, "bert-base");
  EXPECT_EQ((*r)[0].batch, 1);
  EXPECT_DOUBLE_EQ((*r)[0].sm_share, 0.1);
  EXPECT_DOUBLE_EQ((*r)[0].time_quota, 1.0);
  EXPECT_DOUBLE_EQ((*r)[0].latency_s, 0.016135);
  EXPECT_EQ((*r)[1].batch, 32);
  EXPECT_EQ((*r)[1].line, 3);
}

TEST(ProfileParsersTest, DiluErrorsNameFileLineAndField) {
  EXPECT_THAT(ParseDiluProfile("1,10,0.1,1\n1,10,0.1\n", "a.csv", "m"), ErrorAt("a.csv:2", "row"));
  EXPECT_THAT(ParseDiluProfile("1,10,abc,1\n", "a.csv", "m"), ErrorAt("a.csv:1", "latency_s"));
  EXPECT_THAT(ParseDiluProfile("1.5,10,0.1,1\n", "a.csv", "m"), ErrorAt("a.csv:1", "batch"));
  EXPECT_THAT(ParseDiluProfile("1,0,0.1,1\n", "a.csv", "m"), ErrorAt("a.csv:1", "sm_percent"));
  EXPECT_THAT(ParseDiluProfile("1,110,0.1,1\n", "a.csv", "m"), ErrorAt("a.csv:1", "sm_percent"));
  EXPECT_THAT(ParseDiluProfile("1,10,0,1\n", "a.csv", "m"), ErrorAt("a.csv:1", "latency_s"));
  EXPECT_THAT(ParseDiluProfile("\n\n", "a.csv", "m"), ErrorAt("a.csv", "no data rows"));
}

TEST(ProfileParsersTest, Rapp) {
  auto r = ParseRappProfiles(
      "model,sm_pct,batch,quota_pct,latency_ms\nresnet50,50,4,20,78.5\nvgg19,100,1,100,6.1\n",
      "rapp.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].model, "resnet50");
  EXPECT_DOUBLE_EQ((*r)[0].sm_share, 0.5);
  EXPECT_EQ((*r)[0].batch, 4);
  EXPECT_DOUBLE_EQ((*r)[0].time_quota, 0.2);
  EXPECT_DOUBLE_EQ((*r)[0].latency_s, 0.0785);
  EXPECT_EQ((*r)[1].line, 3);
}

TEST(ProfileParsersTest, RappErrors) {
  EXPECT_THAT(ParseRappProfiles("model,sm,batch\nx,1,1\n", "r.csv"), ErrorAt("r.csv:1", "header"));
  const char* h = "model,sm_pct,batch,quota_pct,latency_ms\n";
  EXPECT_THAT(ParseRappProfiles(std::string(h) + "x,50,1,0,5\n", "r.csv"),
              ErrorAt("r.csv:2", "quota_pct"));
  EXPECT_THAT(ParseRappProfiles(std::string(h) + ",50,1,10,5\n", "r.csv"),
              ErrorAt("r.csv:2", "model"));
  EXPECT_THAT(ParseRappProfiles(std::string(h) + "x,50,1,10,-5\n", "r.csv"),
              ErrorAt("r.csv:2", "latency_ms"));
  EXPECT_THAT(ParseRappProfiles("", "r.csv"), ErrorAt("r.csv", "empty"));
}

TEST(ProfileParsersTest, GpuletInference) {
  auto r = ParseGpuletInference("vgg16,1,20,throughput,220.496,latency,0.0045352,1\n", "inf.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].model, "vgg16");
  EXPECT_DOUBLE_EQ((*r)[0].sm_share, 0.2);
  EXPECT_DOUBLE_EQ((*r)[0].latency_s, 0.0045352);
  EXPECT_THAT(ParseGpuletInference("vgg16,1,20,thruput,220,latency,0.004,1\n", "inf.csv"),
              ErrorAt("inf.csv:1", "column 4"));
  EXPECT_THAT(ParseGpuletInference("vgg16,1,20,throughput,220,latency,x,1\n", "inf.csv"),
              ErrorAt("inf.csv:1", "latency"));
}

TEST(ProfileParsersTest, GpuletInterference) {
  auto r = ParseGpuletInterference("vgg19,1,20,resnet50,8,throughput,132.94,latency,0.00752,1\n",
                                   "intf.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  const InterferencePoint& p = (*r)[0];
  EXPECT_EQ(p.model_a, "vgg19");
  EXPECT_EQ(p.batch_a, 1);
  EXPECT_DOUBLE_EQ(p.share_a, 0.2);
  EXPECT_EQ(p.model_b, "resnet50");
  EXPECT_EQ(p.batch_b, 8);
  EXPECT_DOUBLE_EQ(p.latency_s, 0.00752);
  EXPECT_THAT(ParseGpuletInterference("vgg19,1,20,resnet50,0,throughput,1,latency,1,1\n", "i.csv"),
              ErrorAt("i.csv:1", "batchB"));
}

TEST(ProfileParsersTest, VidurMlp) {
  const char* csv =
      "time_stats.emb.median,time_stats.mlp_up_proj.median,time_stats.add.median,"
      "time_stats.add.mean,num_tokens,num_tensor_parallel_workers\n"
      "9.0,1.5,0.5,7.0,512,1\n";
  auto r = ParseVidurMlp(csv, "mlp.csv");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].num_tokens, 512);
  EXPECT_DOUBLE_EQ((*r)[0].layer_time_s, 0.002);  // medians except emb, ms -> s
  EXPECT_THAT(ParseVidurMlp("a,b\n1,2\n", "mlp.csv"), ErrorAt("mlp.csv:1", "header"));
  EXPECT_THAT(ParseVidurMlp(std::string(csv) + "1,1,1,1,0,1\n", "mlp.csv"),
              ErrorAt("mlp.csv:3", "num_tokens"));
}

}  // namespace
}  // namespace sluice::core
