// Function groups in experiment files: expansion (names, model mix, long-tail workloads, the
// model entry's quota), determinism and seeds, mixing with ordinary functions, and bad input at
// its file:line: field.
#include "sim/experiment/experiment_loader.h"

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

class FunctionGroupTest : public ::testing::Test {
 protected:
  absl::StatusOr<SimConfig> Parse(const std::string& yaml) {
    return ParseExperiment(yaml, "dir/exp.yaml", *perf_);
  }
  std::string Error(const std::string& yaml) {
    absl::StatusOr<SimConfig> c = Parse(yaml);
    EXPECT_FALSE(c.ok()) << "parsed:\n" << yaml;
    return c.ok() ? "" : std::string(c.status().message());
  }
  // Lines 1-5 fixed; the group's body follows at line 6.
  static std::string Group(const std::string& body, const std::string& before = "") {
    return absl::StrCat(
        "experiment: t\n"                                           // 1
        "seed: 3\n"                                                 // 2
        "cluster: {nodes: 4, gpus_per_node: 8, gpu: A100-40GB}\n"   // 3
        "policies: [per-request]\n"                                 // 4
        "functions:\n",                                             // 5
        before, body);
  }
  static constexpr const char* kMix =
      "  - function_group:\n"                                                      // 6
      "      name: tail\n"                                                         // 7
      "      count: 200\n"                                                         // 8
      "      models:\n"                                                            // 9
      "        - {model: resnet152, weight: 3, slo_ms: 200, quota: {request: 0.2, limit: 0.4},"
      " instances: {min: 0, initial: 0}}\n"                                        // 10
      "        - {model: bert-base, slo_ms: 300, instances: {min: 0, initial: 0}}\n";  // 11
  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(FunctionGroupTest, ExpandsIntoNamedFunctionsWithTheModelMix) {
  absl::StatusOr<SimConfig> c = Parse(Group(kMix));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->functions.size(), 200u);
  EXPECT_EQ(c->functions[0].name, "tail-000");
  EXPECT_EQ(c->functions[199].name, "tail-199");
  std::map<std::string, int> per_model;
  for (const FunctionConfig& f : c->functions) {
    ++per_model[f.model];
    EXPECT_EQ(f.workload.kind, WorkloadKind::kLongTail);
    EXPECT_EQ(f.initial_instances, 0);
    EXPECT_EQ(f.workload.source_line, 7);  // the group's map
    if (f.model == "resnet152") {
      EXPECT_EQ(f.quota.request, 0.2);
      EXPECT_EQ(f.slo, absl::Milliseconds(200));
    } else {
      EXPECT_EQ(f.slo, absl::Milliseconds(300));
      EXPECT_GT(f.quota.request, 0);  // profiled once for the entry
    }
  }
  // Weights 3 : 1 -> 150 : 50 expected; binomial sd ~6.
  EXPECT_NEAR(per_model["resnet152"], 150, 20);
  EXPECT_EQ(per_model["resnet152"] + per_model["bert-base"], 200);
}

TEST_F(FunctionGroupTest, SameSeedSameFleetAndTheGroupSeedOverridesTheExperiments) {
  auto a = Parse(Group(kMix));
  auto b = Parse(Group(kMix));
  std::string seeded(kMix);
  seeded.insert(seeded.find("      models:"), "      seed: 99\n");
  auto c = Parse(Group(seeded));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  int differ = 0;
  for (size_t i = 0; i < a->functions.size(); ++i) {
    EXPECT_EQ(a->functions[i].model, b->functions[i].model);
    EXPECT_EQ(a->functions[i].workload.longtail.rate_rps,
              b->functions[i].workload.longtail.rate_rps);
    differ += a->functions[i].workload.longtail.rate_rps !=
              c->functions[i].workload.longtail.rate_rps;
  }
  EXPECT_GT(differ, 150);
}

TEST_F(FunctionGroupTest, MixesWithOrdinaryFunctionsAndRejectsDuplicateNames) {
  const std::string one =
      "  - {name: solo, model: resnet152, workload: {kind: poisson, rate_rps: 1}}\n";
  auto c = Parse(Group(kMix, one));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->functions.size(), 201u);
  EXPECT_EQ(c->functions[0].name, "solo");
  EXPECT_EQ(c->functions[1].name, "tail-000");
  const std::string clash =
      "  - {name: tail-007, model: resnet152, workload: {kind: poisson, rate_rps: 1}}\n";
  EXPECT_THAT(Error(Group(kMix, clash)), HasSubstr("duplicate function name 'tail-007'"));
}

TEST_F(FunctionGroupTest, BadInputNamesFileLineAndField) {
  std::string bad_slo(kMix);
  bad_slo.replace(bad_slo.find("slo_ms: 300"), 11, "slo_ms: -1");
  EXPECT_THAT(Error(Group(bad_slo)),
              HasSubstr("exp.yaml:11: field 'functions[0].function_group.models[1].slo_ms'"));
  std::string named(kMix);
  named.replace(named.find("{model: bert-base"), 17, "{name: x, model: bert-base");
  EXPECT_THAT(Error(Group(named)),
              HasSubstr("field 'functions[0].function_group.models[1].name': not allowed"));
  std::string zero(kMix);
  zero.replace(zero.find("count: 200"), 10, "count: 0");
  EXPECT_THAT(Error(Group(zero)),
              HasSubstr("exp.yaml:8: field 'functions[0].function_group.count'"));
  std::string amp(kMix);
  amp.insert(amp.find("      models:"), "      diurnal_amplitude: 1\n");
  EXPECT_THAT(Error(Group(amp)), HasSubstr("function_group.diurnal_amplitude': must be < 1"));
  std::string unknown(kMix);
  unknown.insert(unknown.find("      models:"), "      popularity: zipf\n");
  EXPECT_THAT(Error(Group(unknown)), HasSubstr("function_group.popularity"));
  std::string model(kMix);
  model.replace(model.find("bert-base"), 9, "no-such-model");
  EXPECT_THAT(Error(Group(model)),
              HasSubstr("field 'functions[0].function_group.models[1].model': unknown model"));
  EXPECT_THAT(Error(Group("  - function_group: {name: g, count: 3}\n")),
              HasSubstr("function_group.models': must be a non-empty list"));
}

// The shipped experiment loads: 500 functions, all long-tail, 81 % +- 1.5/500 of them at most
// once a minute (Fig. 5a, stratified).
TEST(ShippedLongTailTest, LongTail500Loads) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  const std::string path =
      std::string(root != nullptr ? root : ".") + "/experiments/longtail-500.yaml";
  absl::StatusOr<SimConfig> c = LoadExperiment(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->functions.size(), 500u);
  int per_minute = 0;
  for (const FunctionConfig& f : c->functions) {
    EXPECT_EQ(f.workload.kind, WorkloadKind::kLongTail);
    per_minute += f.workload.longtail.rate_rps <= 1.0 / 60 * (1 + 1e-9);
  }
  EXPECT_NEAR(per_minute / 500.0, 0.81, 1.5 / 500 + 1e-9);
  EXPECT_EQ(c->policies.size(), 8u);  // + sluice
}

}  // namespace
}  // namespace sluice::sim
