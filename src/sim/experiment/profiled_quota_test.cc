// Quotas from Dilu's profiler in the experiment loader: functions without `quota:` get exactly
// what core::ProfileModel returns (batch and capacity included), explicit quota / max_batch /
// capacity_rps win, failures name the line and slo_ms, the `profiler:` block is validated, and
// the run output records what was profiled.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "core/dilu/perf_trial_runner.h"
#include "sim/experiment/experiment_loader.h"
#include "sim/experiment/function_profile.h"
#include "sim/experiment/report.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

class ProfiledQuotaTest : public ::testing::Test {
 protected:
  // One function `f` of `model` whose body is `body` (lines 7+), after `top` (lines 1-2).
  static std::string Experiment(const std::string& model, const std::string& body,
                                const std::string& top = "seed: 1\nhorizon_s: 10\n") {
    return absl::StrCat(top,                                                     // 1-2
                        "cluster: {nodes: 1, gpus_per_node: 4, gpu: A100-40GB}\n"  // 3
                        "policies: [exclusive]\n"                                  // 4
                        "functions:\n"                                             // 5
                        "  - name: f\n"                                            // 6
                        "    model: ", model, "\n",                                // 7
                        body);
  }
  static std::string Serving(const std::string& extra) {
    return absl::StrCat("    workload: {kind: poisson, rate_rps: 10}\n", extra);  // 8, 9+
  }
  absl::StatusOr<LoadedExperiment> Load(const std::string& yaml) {
    return ParseExperimentWithProfiles(yaml, "dir/exp.yaml", *perf_);
  }
  std::string Error(const std::string& yaml) {
    absl::StatusOr<LoadedExperiment> e = Load(yaml);
    EXPECT_FALSE(e.ok()) << yaml;
    if (e.ok()) return "";
    EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
    return std::string(e.status().message());
  }
  const core::ModelEntry& Model(const std::string& name) { return **perf_->Find(name); }
  static core::Profiler Paper() { return *core::Profiler::Create({}); }

  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(ProfiledQuotaTest, InferenceTakesHgsQuotaBatchAndCapacity) {
  for (const char* model : {"bert-base", "roberta-large", "resnet152", "vgg19"}) {
    absl::StatusOr<LoadedExperiment> e = Load(Experiment(model, Serving("    slo_ms: 100\n")));
    ASSERT_TRUE(e.ok()) << e.status();
    absl::StatusOr<core::Profile> want = core::ProfileModel(
        Paper(), Model(model), core::FunctionKind::kInference, absl::Milliseconds(100));
    ASSERT_TRUE(want.ok()) << want.status();
    const FunctionConfig& f = e->config.functions[0];
    EXPECT_EQ(f.quota, want->quota) << model;
    EXPECT_DOUBLE_EQ(f.quota.limit, std::min(1.0, 2 * want->quota.request)) << model;
    EXPECT_EQ(f.max_batch, want->batch) << model;
    EXPECT_NEAR(f.capacity_rps, want->throughput, 1e-9 * want->throughput) << model;
    ASSERT_EQ(e->profiles.size(), 1u);
    EXPECT_EQ(e->profiles[0].function, "f");
    EXPECT_EQ(e->profiles[0].profile.trials, want->trials);
    EXPECT_EQ(e->profiles[0].profile.batch, want->batch);
    EXPECT_EQ(static_cast<int>(e->profiles[0].profile.log.size()), want->trials);
  }
  // `quota: profile` says the same thing explicitly.
  absl::StatusOr<LoadedExperiment> a = Load(Experiment("bert-base", Serving("")));
  absl::StatusOr<LoadedExperiment> b =
      Load(Experiment("bert-base", Serving("    quota: profile\n")));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->config.functions[0].quota, b->config.functions[0].quota);
  EXPECT_EQ(a->config.functions[0].max_batch, b->config.functions[0].max_batch);
}

TEST_F(ProfiledQuotaTest, TrainingTakesBinarySearchQuota) {
  absl::StatusOr<LoadedExperiment> e =
      Load(Experiment("resnet152", "    kind: training\n    training: {iterations: 10}\n"));
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<core::Profile> want = core::ProfileModel(
      Paper(), Model("resnet152"), core::FunctionKind::kTraining, absl::ZeroDuration());
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(e->config.functions[0].quota, want->quota);
  EXPECT_LT(want->quota.request, want->quota.limit);
  ASSERT_EQ(e->profiles.size(), 1u);
  EXPECT_EQ(e->profiles[0].profile.trials, want->trials);
}

TEST_F(ProfiledQuotaTest, LlmProfilesPerOutputToken) {
  absl::StatusOr<LoadedExperiment> e = Load(Experiment(
      "llama2-7b", Serving("    slo_ms: 6400\n    tokens: {prompt: 128, output: 64}\n")));
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<core::Profile> want = core::ProfileModel(
      Paper(), Model("llama2-7b"), core::FunctionKind::kLlmInference, absl::Milliseconds(100));
  ASSERT_TRUE(want.ok()) << want.status();
  const FunctionConfig& f = e->config.functions[0];
  EXPECT_EQ(f.quota, want->quota);
  EXPECT_EQ(f.max_batch, want->batch);
  EXPECT_EQ(e->profiles[0].profile.profiled_slo, absl::Milliseconds(100));
  // Requests/s as the engine serves them: prefill of every prompt, then 64 decode steps.
  const core::LatencyModel& m = *Model("llama2-7b").latency;
  const double secs = absl::ToDoubleSeconds(m.PrefillLatency(128 * f.max_batch, f.quota.request)) +
                      64 * absl::ToDoubleSeconds(m.BatchLatency(f.max_batch, f.quota.request));
  EXPECT_NEAR(f.capacity_rps, f.max_batch / secs, 1e-9 * f.capacity_rps);
}

TEST_F(ProfiledQuotaTest, ExplicitValuesWin) {
  absl::StatusOr<LoadedExperiment> q =
      Load(Experiment("bert-base", Serving("    quota: {request: 0.3, limit: 0.6}\n")));
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->config.functions[0].quota, (core::SmQuota{0.3, 0.6}));
  EXPECT_EQ(q->config.functions[0].max_batch, 1);
  EXPECT_EQ(q->config.functions[0].capacity_rps, 0);
  EXPECT_TRUE(q->profiles.empty());

  // An explicit max_batch stays, and the request is the smallest SM step meeting SLO/2 at it.
  absl::StatusOr<LoadedExperiment> b = Load(Experiment(
      "roberta-large", Serving("    slo_ms: 100\n    batching: {max_batch: 2}\n"
                               "    capacity_rps: 7\n")));
  ASSERT_TRUE(b.ok()) << b.status();
  const FunctionConfig& f = b->config.functions[0];
  EXPECT_EQ(f.max_batch, 2);
  EXPECT_EQ(f.capacity_rps, 7);
  const core::LatencyModel& m = *Model("roberta-large").latency;
  double request = 0;
  for (int k = 1; k <= 10 && request == 0; ++k) {
    if (m.BatchLatency(2, k / 10.0) <= absl::Milliseconds(50)) request = k / 10.0;
  }
  ASSERT_GT(request, 0);
  EXPECT_NEAR(f.quota.request, request, 1e-9);
  EXPECT_NEAR(f.quota.limit, std::min(1.0, 2 * request), 1e-9);
  EXPECT_EQ(b->profiles[0].profile.batch, 2);
}

TEST_F(ProfiledQuotaTest, ProfilingFailureNamesTheLineAndSloField) {
  EXPECT_THAT(Error(Experiment("roberta-large", Serving("    slo_ms: 0.5\n"))),
              HasSubstr("dir/exp.yaml:9: field 'functions[0].slo_ms': Dilu's profiler found no "
                        "quota for model 'roberta-large': no SM share meets 0.5 x the SLO"));
  // Default SLO (100 ms per request = 0.78 ms per token) is hopeless for an LLM: the error
  // points at the function, since slo_ms is not written.
  EXPECT_THAT(Error(Experiment("llama2-7b", Serving(""))),
              HasSubstr("dir/exp.yaml:6: field 'functions[0].slo_ms': Dilu's profiler found no "
                        "quota for model 'llama2-7b'"));
  EXPECT_THAT(Error(Experiment("bert-base", Serving("    quota: guess\n"))),
              HasSubstr("dir/exp.yaml:9: field 'functions[0].quota': must be {request: R, "
                        "limit: L[, time_quota: Q]} or 'profile', got 'guess'"));
}

TEST_F(ProfiledQuotaTest, ProfilerBlockIsAppliedAndValidated) {
  absl::StatusOr<LoadedExperiment> e = Load(Experiment(
      "bert-base", Serving(""), "profiler: {slo_fraction: 0.25, max_batch: 4, sm_step: 0.05}\n\n"));
  ASSERT_TRUE(e.ok()) << e.status();
  core::ProfilerConfig c;
  c.slo_fraction = 0.25;
  c.max_batch = 4;
  c.sm_step = 0.05;
  absl::StatusOr<core::Profile> want =
      core::ProfileModel(*core::Profiler::Create(c), Model("bert-base"),
                         core::FunctionKind::kInference, absl::Milliseconds(100));
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(e->config.functions[0].quota, want->quota);
  EXPECT_EQ(e->config.functions[0].max_batch, want->batch);
  EXPECT_LE(want->batch, 4);

  const std::string body = Serving("");
  auto error_with = [&](const std::string& block) {
    return Error(Experiment("bert-base", body, absl::StrCat("profiler: ", block, "\n\n")));
  };
  EXPECT_THAT(error_with("{colour: red}"), HasSubstr("1: field 'profiler.colour': unknown field"));
  EXPECT_THAT(error_with("{request_p: 0.9, limit_p: 0.8}"),
              HasSubstr("1: field 'profiler.request_p': request_p (0.9) > limit_p (0.8)"));
  EXPECT_THAT(error_with("{request_p: 1.5}"), HasSubstr("field 'profiler.request_p': must be in"));
  EXPECT_THAT(error_with("{sm_unit: 0.2, sm_step: 0.1}"),
              HasSubstr("field 'profiler.sm_unit': sm_unit (0.2) > sm_step (0.1)"));
  EXPECT_THAT(error_with("{tolerance: 1}"), HasSubstr("field 'profiler.tolerance': must be < 1"));
  EXPECT_THAT(error_with("{te_tolerance: -0.1}"), HasSubstr("field 'profiler.te_tolerance'"));
  EXPECT_THAT(error_with("{max_batch: 0}"), HasSubstr("field 'profiler.max_batch'"));
  EXPECT_THAT(error_with("{limit_factor: 0.5}"),
              HasSubstr("field 'profiler.limit_factor': must be >= 1"));
  EXPECT_THAT(error_with("{slo_fraction: 0}"), HasSubstr("field 'profiler.slo_fraction'"));
  EXPECT_THAT(error_with("fast"), HasSubstr("1: field 'profiler'"));
}

TEST_F(ProfiledQuotaTest, RunOutputRecordsTheProfile) {
  absl::StatusOr<LoadedExperiment> e = Load(Experiment("bert-base", Serving("")));
  ASSERT_TRUE(e.ok()) << e.status();
  RunResult run;
  run.policy = "exclusive";
  run.workload = "default";
  FunctionResult result;
  result.name = "f";
  run.functions.push_back(result);
  const std::vector<RunResult> runs = {run};
  const nlohmann::ordered_json j = SummaryJson(e->config, runs, e->profiles);
  const nlohmann::ordered_json& p = j["runs"][0]["functions"][0]["profile"];
  const FunctionProfile& want = e->profiles[0].profile;
  EXPECT_EQ(p["request"], want.quota.request);
  EXPECT_EQ(p["limit"], want.quota.limit);
  EXPECT_EQ(p["batch"], want.batch);
  EXPECT_EQ(p["trials"], want.trials);
  EXPECT_FALSE(SummaryJson(e->config, runs)["runs"][0]["functions"][0].contains("profile"));
  EXPECT_THAT(SummaryTable(e->config, runs, e->profiles),
              HasSubstr(absl::StrFormat("profiled f        request %.2f, limit %.2f, batch %d",
                                        want.quota.request, want.quota.limit, want.batch)));
}

// Property over random models, batches and SLOs: a pinned-batch profile is a valid elastic
// quota meeting SLO/2 at that batch, and a looser SLO never needs a larger request.
TEST_F(ProfiledQuotaTest, PinnedProfileIsValidAndMonotoneInTheSlo) {
  std::mt19937_64 rng(20240611);
  for (const std::string& name : perf_->names()) {
    const core::ModelEntry& model = Model(name);
    for (int trial = 0; trial < 30; ++trial) {
      const uint64_t seed = rng();
      std::mt19937_64 case_rng(seed);
      ProfileTarget t;
      t.kind = model.info.kind == core::FunctionKind::kLlmInference
                   ? model.info.kind
                   : core::FunctionKind::kInference;
      t.fixed_batch = 1 + static_cast<int>(case_rng() % 32);
      t.output_tokens = 1;  // LLM SLOs below are per token
      t.slo = absl::Milliseconds(1 + static_cast<double>(case_rng() % 2000));
      absl::StatusOr<FunctionProfile> p = ProfileFunction(Paper(), model, t);
      ProfileTarget looser = t;
      looser.slo = t.slo * 2;
      absl::StatusOr<FunctionProfile> q = ProfileFunction(Paper(), model, looser);
      if (!p.ok()) {
        EXPECT_TRUE(absl::IsFailedPrecondition(p.status())) << name << " seed " << seed;
        continue;
      }
      EXPECT_GT(p->quota.request, 0) << name << " seed " << seed;
      EXPECT_LE(p->quota.request, p->quota.limit) << name << " seed " << seed;
      EXPECT_LE(p->quota.limit, 1.0) << name << " seed " << seed;
      EXPECT_LE(model.latency->BatchLatency(*t.fixed_batch, p->quota.request), t.slo / 2)
          << name << " seed " << seed;
      ASSERT_TRUE(q.ok()) << name << " seed " << seed;
      EXPECT_LE(q->quota.request, p->quota.request) << name << " seed " << seed;
    }
  }
}

TEST_F(ProfiledQuotaTest, ProfileFunctionRejectsBadTargets) {
  ProfileTarget t;
  t.kind = core::FunctionKind::kTraining;
  t.method = ProfileMethod::kTraversal;
  EXPECT_TRUE(absl::IsInvalidArgument(ProfileFunction(Paper(), Model("bert-base"), t).status()));
  t = ProfileTarget{};
  t.slo = absl::ZeroDuration();
  EXPECT_TRUE(absl::IsInvalidArgument(ProfileFunction(Paper(), Model("bert-base"), t).status()));
  t = ProfileTarget{};
  t.fixed_batch = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ProfileFunction(Paper(), Model("bert-base"), t).status()));
  // Traversal finds a TE at least as high as HGS's (it sees every point) with more trials.
  t = ProfileTarget{};
  absl::StatusOr<FunctionProfile> hgs = ProfileFunction(Paper(), Model("bert-base"), t);
  t.method = ProfileMethod::kTraversal;
  absl::StatusOr<FunctionProfile> all = ProfileFunction(Paper(), Model("bert-base"), t);
  ASSERT_TRUE(hgs.ok() && all.ok());
  EXPECT_GT(all->trials, hgs->trials);
  EXPECT_GE(all->capacity_rps / all->quota.request,
            hgs->capacity_rps / hgs->quota.request * (1 - 1e-9));
}

}  // namespace
}  // namespace sluice::sim
