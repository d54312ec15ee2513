// The experiment fields HAS-GPU experiments need from the engine side: a function's
// `quota.time_quota` and the cluster's `gpu_price_per_hour` (flat form, node groups, preset
// defaults), with bad values reported at file:line and field.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sim/experiment/experiment_loader.h"

namespace sluice::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class CostFieldsTest : public ::testing::Test {
 protected:
  absl::StatusOr<SimConfig> Parse(const std::string& yaml) {
    return ParseExperiment(yaml, "dir/exp.yaml", *perf_);
  }
  std::string Error(const std::string& yaml) {
    absl::StatusOr<SimConfig> c = Parse(yaml);
    EXPECT_FALSE(c.ok()) << "parsed:\n" << yaml;
    return c.ok() ? "" : std::string(c.status().message());
  }
  // `cluster` on line 2, then one function whose body ends with `extra` (line 8+).
  static std::string With(const std::string& cluster, const std::string& extra = "") {
    return absl::StrCat("experiment: t\n", cluster,
                        "policies: [exclusive]\n"
                        "functions:\n"
                        "  - name: f\n"
                        "    model: resnet152\n"
                        "    workload: {kind: poisson, rate_rps: 10}\n",
                        extra);
  }
  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(CostFieldsTest, TimeQuotaIsReadAndDefaultsToOne) {
  const std::string cluster = "cluster: {nodes: 1, gpus_per_node: 2, gpu: V100-16GB}\n";
  auto c = Parse(With(cluster, "    quota: {request: 0.5, limit: 0.5, time_quota: 0.25}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->functions[0].quota, (core::SmQuota{0.5, 0.5, 0.25}));
  c = Parse(With(cluster, "    quota: {request: 0.5, limit: 0.5}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->functions[0].quota.time_quota, 1.0);
}

TEST_F(CostFieldsTest, TimeQuotaOutsideZeroOneIsAnError) {
  const std::string cluster = "cluster: {nodes: 1, gpus_per_node: 2, gpu: V100-16GB}\n";
  for (const char* bad : {"0", "1.5", "-0.2"}) {
    EXPECT_THAT(Error(With(cluster, absl::StrCat("    quota: {request: 0.5, limit: 0.5, "
                                                 "time_quota: ",
                                                 bad, "}\n"))),
                HasSubstr("dir/exp.yaml:8: field 'functions[0].quota.time_quota': must be in "
                          "(0, 1]"))
        << bad;
  }
}

TEST_F(CostFieldsTest, PresetsPriceTheirGpus) {
  auto c = Parse(With("cluster: {nodes: 2, gpus_per_node: 4, gpu: V100-16GB}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->gpu_price_per_hour, ElementsAre(2.48, 2.48));  // HAS-GPU's Google Cloud price
}

TEST_F(CostFieldsTest, ExplicitPriceOverridesThePreset) {
  auto c = Parse(
      With("cluster: {nodes: 1, gpus_per_node: 4, gpu: V100-16GB, gpu_price_per_hour: 3.06}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->gpu_price_per_hour, ElementsAre(3.06));
  // A GPU that is not a preset has no price unless given.
  c = Parse(With("cluster: {nodes: 1, gpu: {model: X1, sm_count: 80, memory_gib: 32}}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->gpu_price_per_hour, ElementsAre(0.0));
}

TEST_F(CostFieldsTest, NodeGroupsPriceEachGroup) {
  auto c = Parse(With(
      "cluster:\n"
      "  node_groups:\n"
      "    - {name: old, nodes: 2, gpus_per_node: 1, gpu: V100-16GB}\n"
      "    - {name: new, nodes: 1, gpus_per_node: 1, gpu: A100-40GB, gpu_price_per_hour: 4}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->gpu_price_per_hour, ElementsAre(2.48, 2.48, 4.0));
}

TEST_F(CostFieldsTest, NegativePriceIsAnError) {
  EXPECT_THAT(Error(With("cluster: {nodes: 1, gpu: V100-16GB, gpu_price_per_hour: -1}\n")),
              HasSubstr("dir/exp.yaml:2: field 'cluster.gpu_price_per_hour': must be >= 0"));
  EXPECT_THAT(
      Error(With("cluster:\n"
                 "  node_groups:\n"
                 "    - {nodes: 1, gpu: V100-16GB, gpu_price_per_hour: -2.5}\n")),
      HasSubstr("dir/exp.yaml:4: field 'cluster.node_groups[0].gpu_price_per_hour': must be >= 0"));
}

}  // namespace
}  // namespace sluice::sim
