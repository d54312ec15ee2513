// The golden "hybrid_burst" scenario: a hybrid-scaled function (testing::StepHybridScaler, SM
// partition 0.5, time-quota steps of 0.25 from 0.25) on one node of two GPUs follows
// testdata/hybrid_burst_rps.txt (15 s at 1 req/s, 20 s at 30, 25 s at 1). The burst is met first
// by quota steps of the running pod, without a cold start; only when it runs at q = 1 does a new
// pod start; after the burst the quotas step down and the extra pod is removed. The event log
// (without batch lines) is diffed against testdata/hybrid_burst.golden (scripts/update-goldens).
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "sim/engine/engine_test_util.h"
#include "sim/engine/testing/fake_hybrid.h"

namespace sluice::sim {
namespace {

using core::SmQuota;
using testing::ReadFile;
using testing::SourceDir;

SimConfig HybridBurstConfig() {
  SimConfig c = testing::SmallConfig(1, 2);
  c.experiment = "hybrid_burst";
  c.horizon = absl::Seconds(60);
  c.drain_timeout = absl::Seconds(5);
  c.gpu_price_per_hour = {2.48};
  WorkloadSpec burst;
  burst.kind = WorkloadKind::kRpsSeries;
  burst.path = SourceDir() + "/src/sim/engine/testdata/hybrid_burst_rps.txt";
  // 20 ms per batch at the whole GPU: 40 ms / q at s = 0.5, i.e. 6.25 req/s per pod at q = 0.25
  // and 25 req/s at q = 1.
  FunctionConfig f = testing::FakeFunction("hyb", SmQuota{0.5, 0.5, 0.25}, burst);
  f.slo = absl::Milliseconds(500);
  c.functions = {f};
  return c;
}

std::string WithoutBatches(const std::string& log) {
  std::string out;
  for (absl::string_view l : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    if (l.find(" batch_") == absl::string_view::npos)
      absl::StrAppend(&out, l, "\n");
  }
  return out;
}

// Time of the first line at or after `from` seconds containing `what`, or -1.
double FirstTime(const std::string& log, const std::string& what, double from = 0) {
  for (absl::string_view l : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    double t = -1;
    EXPECT_TRUE(absl::SimpleAtod(l.substr(0, l.find(' ')), &t)) << l;
    if (t >= from && l.find(what) != absl::string_view::npos)
      return t;
  }
  return -1;
}

constexpr double kBurstStart = 15;

TEST(EngineGoldenTest, HybridBurstStepsQuotaFirstThenAddsAPod) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(20));
  testing::FakePolicyOptions o;
  o.hybrid = [](const core::FunctionTraits& t) {
    testing::StepHybridOptions step;
    step.high = 0.9;  // 30 req/s needs two pods at q = 1 (25 req/s each), with margin
    return std::make_unique<testing::StepHybridScaler>(t, step);
  };
  auto out = testing::RunFake(HybridBurstConfig(), std::move(o), *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::string& log = out->log;
  const FunctionResult& r = out->result.functions[0];
  // Vertical first: the running pod steps up to q = 1 within the burst's first seconds; only then
  // does a new pod start, and the quota steps cold-started nothing.
  const double full =
      FirstTime(log, "hyb quota inst=0 request=0.500 limit=0.500 q=1.000", kBurstStart);
  const double added = FirstTime(log, "hyb place inst=1");
  ASSERT_GT(full, kBurstStart) << log;
  EXPECT_LE(full, kBurstStart + 4) << log;
  ASSERT_GT(added, full) << log;
  EXPECT_LE(added, kBurstStart + 6) << log;
  EXPECT_EQ(FirstTime(log, "cold_start"), added);
  EXPECT_EQ(r.cold_starts, 1);
  EXPECT_GE(r.vertical_scalings, 6);  // up and back down, on both pods
  EXPECT_GT(FirstTime(log, "hyb drain inst=1"), kBurstStart + 20) << log;
  EXPECT_EQ(r.rejected_actions, 0);
  EXPECT_GT(out->result.cost_usd, 0);
  const std::string got = WithoutBatches(log);
  const std::string path = SourceDir() + "/src/sim/engine/testdata/hybrid_burst.golden";
  if (std::getenv("SLUICE_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string want = ReadFile(path);
  ASSERT_FALSE(want.empty()) << "missing " << path << " (run scripts/update-goldens)";
  EXPECT_TRUE(want == got)
      << "hybrid_burst.golden differs: scripts/update-goldens, review the diff";
}

}  // namespace
}  // namespace sluice::sim
