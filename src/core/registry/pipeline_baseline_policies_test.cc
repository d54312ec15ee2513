// The QUART paper's baselines as registry entries: inferline (pipeline scaler and one-stage
// function scaler), cocktail (per-stage scaler, no pipeline scaler), infless (INFless's
// published histogram defaults); params reach them and bad ones name the key.
#include "core/registry/pipeline_baseline_policies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/registry/baseline_policies.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

FunctionTraits Stage(double mu = 10) {
  FunctionTraits f;
  f.capacity_rps = mu;
  f.max_instances = 32;
  f.slo = absl::Milliseconds(600);
  return f;
}

std::unique_ptr<PolicySet> Make(std::string_view name, std::vector<PolicyParam> params = {}) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string Error(std::string_view name, std::vector<PolicyParam> params) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(InferLinePolicySet, PipelineScalerScalesEveryStageOnAnEntryBurst) {
  auto set = Make("inferline");
  EXPECT_EQ(set->QuotaFor(Stage()), (SmQuota{1, 1}));
  std::vector<PipelineStageTraits> traits(2);
  for (auto& t : traits)
    t.latency_target = absl::Milliseconds(600);
  auto p = set->MakePipelineScaler({Stage(), Stage()}, traits, absl::Seconds(2));
  ASSERT_NE(p, nullptr);
  std::vector<PipelineStageSample> w(2);
  w[0].arrival_rps = 90;
  w[0].ready_replicas = w[1].ready_replicas = 1;
  p->Observe(w, kT0);
  const PipelineDecision d = p->Decide(kT0, 0);
  EXPECT_EQ(d.stages[0].replica_delta, 5);  // 90 / (1 s + 0.5 s slack) / 10 rps
  EXPECT_EQ(d.stages[1].replica_delta, 5);
  EXPECT_EQ(p->Decide(kT0, 0).stages[0].replica_delta, 0);
  EXPECT_EQ(set->MakePipelineScaler({Stage(0)}, {PipelineStageTraits{}}, absl::Seconds(1)),
            nullptr);
}

TEST(InferLinePolicySet, FunctionScalerHoldsBeforeScalingDown) {
  auto set = Make(
      "inferline",
      {{"scale_down_hold_s", "5", 2}, {"tuner_history_s", "2", 3}, {"plan_period_s", "1000", 4}});
  auto s = set->MakeScaler(Stage());
  LoadSample x;
  x.at = kT0;
  x.rps = 90;
  x.instances = 1;
  s->Observe(x);
  EXPECT_EQ(s->Desired(kT0), 6);
  int first_down = -1;
  for (int i = 1; i <= 20 && first_down < 0; ++i) {
    x.at = kT0 + absl::Seconds(i);
    x.rps = 5;
    x.instances = 6;
    s->Observe(x);
    if (s->Desired(x.at) < 6)
      first_down = i;
  }
  // The burst leaves the 2 s history at t0 + 2 s; the hold adds 5 s.
  EXPECT_EQ(first_down, 7);
}

TEST(CocktailPolicySet, PerStageScalerNoPipelineScaler) {
  auto set = Make("cocktail", {{"over_provision", "0.5", 2}});
  EXPECT_EQ(set->MakePipelineScaler({Stage()}, {PipelineStageTraits{}}, absl::Seconds(1)), nullptr);
  auto s = set->MakeScaler(Stage());
  EXPECT_EQ(s->name(), "cocktail");
  LoadSample x;
  for (int i = 0; i <= 5; ++i) {
    x.at = kT0 + absl::Seconds(i);
    x.rps = 20;
    s->Observe(x);
  }
  // Forecast 20 rps x 1.5 over-provisioning = 30 rps: 3 instances (reactive alone: 2).
  EXPECT_EQ(s->Desired(x.at), 3);
  EXPECT_EQ(set->QuotaFor(Stage()), (SmQuota{1, 1}));
}

TEST(InflessPolicySet, PaperDefaultsAndInflessLKeys) {
  auto set = Make("infless");
  EXPECT_EQ(set->name(), "infless");
  EXPECT_EQ(set->MakeScaler(Stage())->name(), "hybrid-histogram");
  EXPECT_THAT(Error("infless", {{"share", "request", 3}}), HasSubstr("'share'"));
  EXPECT_NE(Make("infless", {{"bin_s", "1", 2}}), nullptr);
}

// Sets without pipeline-level scaling serve a pipeline's stages as ordinary functions.
// INFless on a burst: scale-out at once; with no trusted idle-time histogram yet, the instances
// stay for the 4-hour fallback keep-alive (ATC'20's range), then go.
TEST(InflessPolicySet, BurstScalesOutAtOnceAndHoldsForTheHistogramRange) {
  auto s = Make("infless")->MakeScaler(Stage());
  LoadSample x;
  x.at = kT0;
  x.rps = 35;
  s->Observe(x);
  EXPECT_EQ(s->Desired(kT0), 4);
  x.at = kT0 + absl::Seconds(1);
  x.rps = 0;
  s->Observe(x);
  EXPECT_EQ(s->Desired(kT0 + absl::Minutes(10)), 4);
  EXPECT_EQ(s->Desired(kT0 + absl::Hours(4) + absl::Seconds(1)), 0);
}

TEST(PipelineBaselinePolicies, PerFunctionSetsLeaveStagesToTheirOwnScalers) {
  std::vector<PipelineStageTraits> traits(2);
  for (const char* name : {"cocktail", "infless", "dilu", "has-gpu", "exclusive"}) {
    auto set = Make(name);
    ASSERT_NE(set, nullptr) << name;
    EXPECT_EQ(set->MakePipelineScaler({Stage(), Stage()}, traits, absl::Seconds(1)), nullptr)
        << name;
    EXPECT_NE(set->MakeScaler(Stage()), nullptr) << name;
  }
  for (const char* name : {"quart", "inferline"}) {
    EXPECT_NE(Make(name)->MakePipelineScaler({Stage(), Stage()}, traits, absl::Seconds(1)), nullptr)
        << name;
  }
}

TEST(PipelineBaselinePolicies, BadParamsNameTheKey) {
  EXPECT_THAT(Error("inferline", {{"plan_period_s", "0", 3}}), HasSubstr("'plan_period_s'"));
  EXPECT_THAT(Error("inferline", {{"plan_period_s", "0", 3}}), HasSubstr("exp.yaml:3"));
  EXPECT_THAT(Error("cocktail", {{"alpha", "0", 4}}), HasSubstr("'alpha'"));
  EXPECT_THAT(Error("cocktail", {{"horizon_s", "-1", 5}}), HasSubstr("'horizon_s'"));
}

}  // namespace
}  // namespace sluice::core
