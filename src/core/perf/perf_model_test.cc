#include "core/perf/perf_model.h"

#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/perf/analytic_latency_model.h"
#include "core/perf/builtin_models.h"

namespace sluice::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A LatencyModel with a fixed latency, to test the catalogue without the analytic model.
class ConstantModel : public LatencyModel {
 public:
  explicit ConstantModel(absl::Duration d) : d_(d) {}
  absl::Duration BatchLatency(int, double, double) const override { return d_; }
  absl::Duration IterationTime(double) const override { return 3 * d_; }

 private:
  absl::Duration d_;
};

double Seconds(absl::Duration d) {
  return absl::ToDoubleSeconds(d);
}

TEST(PerfModelTest, BuiltInHasTheCatalogue) {
  auto pm = PerfModel::BuiltIn();
  EXPECT_THAT(pm->names(), ElementsAre("bert-base", "chatglm3-6b", "gpt2-large", "llama2-7b",
                                       "resnet152", "roberta-large", "vgg19"));
  auto llama = pm->Find("llama2-7b");
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ((*llama)->info.kind, FunctionKind::kLlmInference);
  EXPECT_GT((*llama)->info.param_bytes, Bytes::GiB(12));
  EXPECT_EQ((*pm->Find("resnet152"))->info.kind, FunctionKind::kInference);
  for (const std::string& name : pm->names()) {
    const ModelEntry* e = *pm->Find(name);
    EXPECT_NE(e->latency, nullptr);
    EXPECT_GE(e->info.gpu_memory, e->info.param_bytes) << name;
  }
}

TEST(PerfModelTest, FindIsCaseAndSeparatorInsensitive) {
  auto pm = PerfModel::BuiltIn();
  auto a = pm->Find("BERT_base");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->info.name, "bert-base");
}

TEST(PerfModelTest, FindUnknownNamesKnownModels) {
  auto pm = PerfModel::BuiltIn();
  auto r = pm->Find("resnet9000");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("resnet9000"));
  EXPECT_THAT(r.status().message(), HasSubstr("llama2-7b"));
  EXPECT_THAT(r.status().message(), HasSubstr("vgg19"));
}

TEST(PerfModelTest, AddReplacesAndValidates) {
  PerfModel pm;
  ModelInfo info{"Custom_Net", FunctionKind::kInference, Bytes::MiB(10), Bytes::MiB(100), 16};
  ASSERT_TRUE(pm.Add(info, std::make_unique<ConstantModel>(absl::Milliseconds(5))).ok());
  ASSERT_TRUE(pm.Add(info, std::make_unique<ConstantModel>(absl::Milliseconds(7))).ok());
  const ModelEntry* e = *pm.Find("custom-net");
  EXPECT_EQ(e->latency->BatchLatency(1, 1.0), absl::Milliseconds(7));
  EXPECT_EQ(e->info.training_batch, 16);
  EXPECT_EQ(pm.names().size(), 1u);

  EXPECT_EQ(pm.Add(info, nullptr).code(), absl::StatusCode::kInvalidArgument);
  ModelInfo unnamed = info;
  unnamed.name = " ";
  EXPECT_EQ(pm.Add(unnamed, std::make_unique<ConstantModel>(absl::Seconds(1))).code(),
            absl::StatusCode::kInvalidArgument);
  ModelInfo bad_batch = info;
  bad_batch.training_batch = 0;
  EXPECT_EQ(pm.Add(bad_batch, std::make_unique<ConstantModel>(absl::Seconds(1))).code(),
            absl::StatusCode::kInvalidArgument);
  ModelInfo negative = info;
  negative.gpu_memory = Bytes(-1);
  EXPECT_EQ(pm.Add(negative, std::make_unique<ConstantModel>(absl::Seconds(1))).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PerfModelTest, InterferenceSlowdown) {
  PerfModel pm;
  EXPECT_DOUBLE_EQ(pm.interference_kappa(), PerfModel::kDefaultInterferenceKappa);
  pm.set_interference_kappa(0.5);
  EXPECT_DOUBLE_EQ(pm.InterferenceSlowdown(0.0), 1.0);
  EXPECT_DOUBLE_EQ(pm.InterferenceSlowdown(0.4), 1.2);
  EXPECT_DOUBLE_EQ(pm.InterferenceSlowdown(1.0), 1.5);
  EXPECT_DOUBLE_EQ(pm.InterferenceSlowdown(3.0), 1.5);   // clamped
  EXPECT_DOUBLE_EQ(pm.InterferenceSlowdown(-1.0), 1.0);  // clamped
  pm.set_interference_kappa(-2);
  EXPECT_DOUBLE_EQ(pm.interference_kappa(), 0.0);
  EXPECT_DOUBLE_EQ(pm.InterferenceSlowdown(1.0), 1.0);
}

// Property: every built-in model is positive, finite and monotone in batch, share and quota
// (and prefill in tokens and share) over seeded random arguments.
TEST(PerfModelTest, BuiltInModelsAreMonotone) {
  auto pm = PerfModel::BuiltIn();
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> share(0.005, 1.05), delta(0.0, 0.3);
    std::uniform_int_distribution<int> batch(1, 300), step(0, 40), tokens(0, 5000);
    for (const std::string& name : pm->names()) {
      const LatencyModel& m = *(*pm->Find(name))->latency;
      for (int i = 0; i < 50; ++i) {
        int b = batch(rng);
        double s = share(rng), q = share(rng);
        double t = Seconds(m.BatchLatency(b, s, q));
        ASSERT_TRUE(t > 0 && std::isfinite(t)) << name;
        ASSERT_LE(t, Seconds(m.BatchLatency(b + step(rng), s, q))) << name << " batch " << b;
        ASSERT_GE(t, Seconds(m.BatchLatency(b, s + delta(rng), q))) << name << " share " << s;
        ASSERT_GE(t, Seconds(m.BatchLatency(b, s, q + delta(rng)))) << name << " quota " << q;
        int p = tokens(rng);
        double pf = Seconds(m.PrefillLatency(p, s));
        ASSERT_LE(pf, Seconds(m.PrefillLatency(p + step(rng), s))) << name;
        ASSERT_GE(pf, Seconds(m.PrefillLatency(p, s + delta(rng)))) << name;
      }
    }
  }
}

TEST(PerfModelTest, LlmPrefillAndTrainingContracts) {
  auto pm = PerfModel::BuiltIn();
  const LatencyModel& llama = *(*pm->Find("llama2-7b"))->latency;
  // Prefill of 512 tokens on the whole GPU: one forward step plus ~33 ms of GEMMs (Vidur A100).
  double pf = Seconds(llama.PrefillLatency(512, 1.0));
  EXPECT_NEAR(pf, Seconds(llama.BatchLatency(1, 1.0)) + 512 * 6.41229e-05, 1e-9);
  EXPECT_GT(Seconds(llama.PrefillLatency(512, 0.5)), pf);
  const LatencyModel& resnet = *(*pm->Find("resnet152"))->latency;
  EXPECT_EQ(resnet.PrefillLatency(512, 1.0), absl::ZeroDuration());
  // (absl::Duration rounds to a quarter nanosecond.)
  EXPECT_NEAR(Seconds(resnet.IterationTime(0.5)), 3 * Seconds(resnet.BatchLatency(32, 0.5)), 1e-9);
  // chatglm3-6b is llama2-7b scaled by parameter count.
  const LatencyModel& glm = *(*pm->Find("chatglm3-6b"))->latency;
  EXPECT_NEAR(Seconds(glm.BatchLatency(8, 0.6)) / Seconds(llama.BatchLatency(8, 0.6)), 6.24 / 6.74,
              1e-7);
}

TEST(PerfModelTest, TimeQuotaSlowsDown) {
  auto pm = PerfModel::BuiltIn();
  const LatencyModel& m = *(*pm->Find("resnet152"))->latency;
  EXPECT_EQ(m.BatchLatency(4, 0.5, 1.0), m.BatchLatency(4, 0.5));
  EXPECT_GT(m.BatchLatency(4, 0.5, 0.1), 5 * m.BatchLatency(4, 0.5, 1.0));
  // Out-of-range arguments clamp instead of failing.
  EXPECT_EQ(m.BatchLatency(0, 2.0, 7.0), m.BatchLatency(1, 1.0, 1.0));
  EXPECT_EQ(m.BatchLatency(1, 0.0), m.BatchLatency(1, 0.01));
}

}  // namespace
}  // namespace sluice::core
