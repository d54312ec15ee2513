// The experiment loader's `fluid:` block (sim_config.h: FluidConfig): absent = exact engine,
// present = on with its threshold, bad values and unknown keys named with file, line and field.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sim/experiment/experiment_loader.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

std::string Experiment(const std::string& tail) {
  return absl::StrCat(
      "experiment: t\n"                                          // 1
      "cluster: {nodes: 1, gpus_per_node: 2, gpu: A100-40GB}\n"  // 2
      "policies: [exclusive]\n"                                   // 3
      "functions:\n"                                              // 4
      "  - name: f\n"                                             // 5
      "    model: resnet152\n"                                    // 6
      "    workload: {kind: poisson, rate_rps: 10}\n",            // 7
      tail);                                                      // 8+
}

std::string Error(const std::string& yaml) {
  absl::StatusOr<SimConfig> c = ParseExperiment(yaml, "dir/exp.yaml");
  EXPECT_FALSE(c.ok()) << yaml;
  return c.ok() ? "" : std::string(c.status().message());
}

TEST(FluidLoaderTest, AbsentMeansExactAndPresentTurnsItOn) {
  absl::StatusOr<SimConfig> off = ParseExperiment(Experiment(""), "dir/exp.yaml");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->fluid.enabled);
  absl::StatusOr<SimConfig> on =
      ParseExperiment(Experiment("fluid: {min_mean_rps: 0.5}\n"), "dir/exp.yaml");
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_TRUE(on->fluid.enabled);
  EXPECT_EQ(on->fluid.min_mean_rps, 0.5);
  EXPECT_EQ(on->fluid.batch_samples, 1);  // unbatched unless asked
  absl::StatusOr<SimConfig> batched =
      ParseExperiment(Experiment("fluid: {min_mean_rps: 0.5, batch_samples: 10}\n"), "e.yaml");
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_EQ(batched->fluid.batch_samples, 10);
  EXPECT_FALSE(batched->fluid.draw_thread);  // off unless asked
  auto threaded = ParseExperiment(Experiment("fluid: {min_mean_rps: 0.5, draw_thread: true}\n"),
                                  "e.yaml");
  ASSERT_TRUE(threaded.ok()) << threaded.status();
  EXPECT_TRUE(threaded->fluid.draw_thread);
}

TEST(FluidLoaderTest, BadValuesNameTheField) {
  EXPECT_THAT(Error(Experiment("fluid: {min_mean_rps: 0}\n")),
              HasSubstr("dir/exp.yaml:8: field 'fluid.min_mean_rps': must be > 0"));
  EXPECT_THAT(Error(Experiment("fluid: {min_mean_rps: fast}\n")),
              HasSubstr("dir/exp.yaml:8: field 'fluid.min_mean_rps': must be a number"));
  EXPECT_THAT(Error(Experiment("fluid: {min_rps: 1}\n")),
              HasSubstr("dir/exp.yaml:8: field 'fluid.min_rps': unknown field"));
  EXPECT_THAT(Error(Experiment("fluid: {}\n")),
              HasSubstr("field 'fluid.min_mean_rps': required field is missing"));
  EXPECT_THAT(Error(Experiment("fluid: 1\n")), HasSubstr("field 'fluid': must be a map"));
  EXPECT_THAT(Error(Experiment("fluid: {min_mean_rps: 1, batch_samples: 0}\n")),
              HasSubstr("dir/exp.yaml:8: field 'fluid.batch_samples': must be > 0"));
  EXPECT_THAT(Error(Experiment("fluid: {min_mean_rps: 1, batch_samples: 2.5}\n")),
              HasSubstr("field 'fluid.batch_samples'"));
  EXPECT_THAT(Error(Experiment("fluid: {min_mean_rps: 1, batch_samples: 5000}\n")),
              HasSubstr("field 'fluid.batch_samples': must be at most 3600"));
  EXPECT_THAT(Error(Experiment("fluid: {min_mean_rps: 1, draw_thread: 2}\n")),
              HasSubstr("field 'fluid.draw_thread'"));
}

TEST(FluidLoaderTest, QuietBatchSamplesDefaultsOnAndIsChecked) {
  absl::StatusOr<SimConfig> c = ParseExperiment(Experiment(""), "dir/exp.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->quiet_batch_samples, 60);
  c = ParseExperiment(Experiment("quiet_batch_samples: 1\n"), "dir/exp.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->quiet_batch_samples, 1);
  EXPECT_THAT(Error(Experiment("quiet_batch_samples: 0\n")),
              HasSubstr("dir/exp.yaml:8: field 'quiet_batch_samples': must be > 0"));
  EXPECT_THAT(Error(Experiment("quiet_batch_samples: 4000\n")),
              HasSubstr("field 'quiet_batch_samples': must be at most 3600"));
}

}  // namespace
}  // namespace sluice::sim
