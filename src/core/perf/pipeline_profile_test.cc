// Tests of QUART's Table 1 models split into stages (pipeline_profile.h): the table's facts, even
// splits, errors naming the field, stage latency sums and shapes, and the stage-name round trip.
#include "core/perf/pipeline_profile.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PipelineProfileTest, KnowsTableOnesFiveModels) {
  EXPECT_THAT(PipelineModelNames(),
              ElementsAre("bert-21b", "llama-7b", "opt-66b", "whisper-9b", "wideresnet"));
  auto llama = FindPipelineModel("LLaMA-7B");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->standalone_exec, absl::Milliseconds(243));
  EXPECT_EQ(llama->tokens, 1024);
  EXPECT_EQ(llama->layers, 32);
  EXPECT_EQ(llama->param_bytes.count(), int64_t{14'000'000'000});
  EXPECT_EQ(FindPipelineModel("opt_66b")->standalone_exec, absl::Milliseconds(278));
  EXPECT_EQ(FindPipelineModel("wideresnet")->standalone_exec, absl::Milliseconds(646));
  for (const std::string& name : PipelineModelNames()) {
    EXPECT_EQ(FindPipelineModel(name)->layers % 8, 0) << name << ": QUART splits into 8";
  }
}

TEST(PipelineProfileTest, UnknownModelListsTheKnownOnes) {
  auto m = FindPipelineModel("gpt-5");
  EXPECT_TRUE(absl::IsNotFound(m.status()));
  EXPECT_THAT(m.status().message(), HasSubstr("llama-7b"));
  EXPECT_TRUE(absl::IsNotFound(SplitPipeline("gpt-5", 8, "f").status()));
}

TEST(PipelineProfileTest, StageCountThatDoesNotDivideNamesTheFieldAndTheChoices) {
  auto s = SplitPipeline("llama-7b", 6, "functions[2].pipeline.stages");
  ASSERT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_THAT(s.status().message(), HasSubstr("functions[2].pipeline.stages"));
  EXPECT_THAT(s.status().message(), HasSubstr("1, 2, 4, 8, 16, 32"));
  EXPECT_FALSE(SplitPipeline("llama-7b", 0, "f").ok());
  EXPECT_FALSE(SplitPipeline("llama-7b", -8, "f").ok());
}

TEST(PipelineProfileTest, EvenSplitConservesParametersTimeAndHandsActivationsOn) {
  for (const std::string& name : PipelineModelNames()) {
    const PipelineModelInfo info = *FindPipelineModel(name);
    auto stages = SplitPipeline(name, 8, "f");
    ASSERT_TRUE(stages.ok()) << stages.status();
    ASSERT_EQ(stages->size(), 8u);
    int64_t params = 0;
    absl::Duration exec;
    for (const StageProfile& s : *stages) {
      params += s.param_bytes.count();
      exec += s.exec_batch1;
      EXPECT_EQ(s.count, 8);
      EXPECT_EQ(s.model_key, StageModelName(name, s.index, 8));
      EXPECT_GT(s.gpu_memory, s.param_bytes) << s.model_key;
      EXPECT_GT(s.cpu_slowdown, 1) << s.model_key << ": a CPU worker is slower than a GPU";
      EXPECT_EQ(s.activation_out.count() > 0, s.index < 7) << s.model_key;
    }
    EXPECT_NEAR(params, info.param_bytes.count(), 8) << name;
    EXPECT_LE(absl::AbsDuration(exec - info.standalone_exec), absl::Microseconds(1)) << name;
  }
  // LLaMA-7B: hidden 4096 x 1024 tokens x fp16.
  EXPECT_EQ((*SplitPipeline("llama-7b", 8, "f"))[0].activation_out.count(), 4096 * 1024 * 2);
}

TEST(PipelineProfileTest, RegisteredStagesReproduceTheStageTimeAndCurveShape) {
  PerfModel perf;
  ASSERT_TRUE(AddPipelineStages(perf, "llama-7b", 8, "f").ok());
  ASSERT_TRUE(AddPipelineStages(perf, "wideresnet", 8, "f").ok());
  EXPECT_EQ(perf.names().size(), 16u);
  for (const char* key : {"llama-7b/s0of8", "wideresnet/s7of8"}) {
    auto e = perf.Find(key);
    ASSERT_TRUE(e.ok()) << key;
    const LatencyModel& m = *(*e)->latency;
    const absl::Duration b1 = m.BatchLatency(1, 1.0);
    const absl::Duration expected = (*SplitPipeline(
        std::string_view(key).substr(0, std::string_view(key).find('/')), 8, "f"))[0].exec_batch1;
    EXPECT_LE(absl::AbsDuration(b1 - expected), absl::Microseconds(10)) << key;
    EXPECT_GT(m.BatchLatency(8, 1.0), b1) << key << ": a batch costs more than one request";
    EXPECT_LT(m.BatchLatency(8, 1.0), 8 * b1) << key << ": batching pays";
    EXPECT_GT(m.BatchLatency(1, 0.25), b1) << key << ": fewer SMs are slower";
  }
  EXPECT_FALSE(AddPipelineStages(perf, "llama-7b", 3, "f").ok());
}

// Property: for every model and every dividing stage count, latency is monotone in batch and
// SM share (the perf model's contract), over seeded random points.
TEST(PipelineProfileTest, StageModelsKeepThePerfModelContract) {
  std::mt19937 rng(7);
  for (const std::string& name : PipelineModelNames()) {
    for (int n : {1, 2, 4, 8, 16}) {
      PerfModel perf;
      ASSERT_TRUE(AddPipelineStages(perf, name, n, "f").ok()) << name << " " << n;
      const LatencyModel& m = *(*perf.Find(StageModelName(name, n - 1, n)))->latency;
      std::uniform_real_distribution<double> share(0.05, 1.0);
      std::uniform_int_distribution<int> batch(1, 7);
      for (int k = 0; k < 50; ++k) {
        const int b = batch(rng);
        const double s = share(rng);
        SCOPED_TRACE(absl::StrCat(name, " n=", n, " b=", b, " s=", s, " seed=7"));
        EXPECT_LE(m.BatchLatency(b, s), m.BatchLatency(b + 1, s));
        EXPECT_GE(m.BatchLatency(b, s), m.BatchLatency(b, std::min(1.0, s + 0.05)));
      }
    }
  }
}

TEST(PipelineProfileTest, StageModelNameRoundTrips) {
  EXPECT_EQ(StageModelName("LLaMA-7B", 3, 8), "llama-7b/s3of8");
  auto ref = ParseStageModelName("llama-7b/s3of8");
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->model, "llama-7b");
  EXPECT_EQ(ref->index, 3);
  EXPECT_EQ(ref->count, 8);
  for (const char* bad : {"llama-7b", "llama-7b/s8of8", "llama-7b/sxof8", "llama-7b/s1of",
                          "/s1of2x", "llama-7b/s-1of8"}) {
    EXPECT_FALSE(ParseStageModelName(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace sluice::core
