// Progress of `sim run`: the formatting on its own, the run-boundary detection, and `sim run`
// with and without a progress stream (quiet when piped: nothing extra on stderr).
#include "sim/cli/sim_progress.h"

#include <cstdlib>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cli/sim_command.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

TEST(SimProgressTest, FormatsRunsTimeRateAndEta) {
  SimProgress p;
  p.runs_done = 1;
  p.runs_total = 4;
  p.sim_elapsed = absl::Seconds(150);
  p.horizon = absl::Seconds(300);
  p.events = 2'500'000;
  p.wall = absl::Seconds(30);
  // 1.5 of 4 runs in 30 s: 50 s to go.
  EXPECT_EQ(FormatSimProgress(p), "run 2/4  sim 150/300 s  83.3k events/s  ETA 0:50");
  p.events = 60'000'000;
  p.wall = absl::Seconds(3000);
  EXPECT_EQ(FormatSimProgress(p), "run 2/4  sim 150/300 s  20.0k events/s  ETA 1:23:20");
  EXPECT_EQ(FormatSimProgress({0, 2, absl::ZeroDuration(), absl::Seconds(10), 0,
                               absl::ZeroDuration()}),
            "run 1/2  sim 0/10 s  - events/s  ETA ?");
}

TEST(SimProgressTest, MeterCountsRunsAtTimeResets) {
  std::ostringstream out;
  absl::Time now = absl::UnixEpoch();
  SimProgressMeter meter(out, [&now] { return now; }, 2, absl::Seconds(10));
  now += absl::Seconds(1);
  meter.OnSample(absl::Seconds(5), 100);
  now += absl::Seconds(1);
  meter.OnSample(absl::Seconds(1), 30);  // the second run
  meter.Finish();
  EXPECT_THAT(out.str(), HasSubstr("\rrun 1/2  sim 5/10 s  100 events/s"));
  EXPECT_THAT(out.str(), HasSubstr("\rrun 2/2  sim 1/10 s  65 events/s"));
  EXPECT_EQ(out.str().back(), '\n');
}

std::string Quickstart() {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/experiments/quickstart.yaml";
}

TEST(SimProgressTest, SimRunIsQuietWithoutATerminalAndShowsProgressWithOne) {
  SimRunOptions o;
  o.experiment = Quickstart();
  o.policies = {"exclusive"};
  absl::Time now = absl::UnixEpoch();
  o.wall_clock = [&now] { return now += absl::Milliseconds(300); };
  std::ostringstream out, err;
  ASSERT_EQ(RunSimCommand(o, out, err), 0) << err.str();
  EXPECT_EQ(err.str(), "");  // piped: no progress stream
  std::ostringstream progress, out2, err2;
  o.progress = &progress;
  ASSERT_EQ(RunSimCommand(o, out2, err2), 0) << err2.str();
  EXPECT_EQ(out2.str(), out.str());  // progress never changes the report
  EXPECT_THAT(progress.str(), HasSubstr("\rrun 1/1  sim "));
  EXPECT_THAT(progress.str(), HasSubstr("/300 s"));
  EXPECT_EQ(progress.str().back(), '\n');
}

}  // namespace
}  // namespace sluice::sim
