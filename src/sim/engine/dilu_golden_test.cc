// The golden "dilu_burst" scenario: Dilu's two-dimensional scaling on one node. BERT-base
// inference (<0.3, 0.6>, lazy scaler defaults: 40 s window, phi_out 20) beside a best-effort
// BERT-base training job follows testdata/dilu_burst_rps.txt (30 s low, 40 s above one
// instance's capacity, 30 s low). The event log (filtered to lifecycle and `share` lines) is diffed
// against testdata/dilu_burst.golden (scripts/update-goldens rewrites it), and explicit checks
// read the full log: scale-up within one controller period, scale-out only after the window fills.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "core/perf/perf_model.h"
#include "sim/engine/engine_test_util.h"
#include "sim/engine/simulation.h"

namespace sluice::sim {
namespace {

using core::SmQuota;
using testing::FakeFunction;
using testing::ReadFile;
using testing::SourceDir;

SimConfig DiluBurstConfig() {
  SimConfig c = testing::SmallConfig(1, 2);
  c.experiment = "dilu_burst";
  c.horizon = absl::Seconds(100);
  c.drain_timeout = absl::Seconds(1);
  WorkloadSpec burst;
  burst.kind = WorkloadKind::kRpsSeries;
  burst.path = SourceDir() + "/src/sim/engine/testdata/dilu_burst_rps.txt";
  FunctionConfig inf = FakeFunction("inf", SmQuota{0.3, 0.6}, burst);
  inf.model = "bert-base";
  inf.max_batch = 8;
  inf.max_queue_delay = absl::Milliseconds(5);
  inf.slo = absl::Milliseconds(100);
  inf.max_instances = 2;
  inf.capacity_rps = 60;  // the scaler's per-instance serving throughput: 20 < 60 < 90 req/s
  FunctionConfig tr = FakeFunction("train", SmQuota{0.12, 0.5}, WorkloadSpec{});
  tr.model = "bert-base";
  tr.kind = core::FunctionKind::kTraining;
  tr.training = TrainingConfig{};
  tr.training->iterations = 1 << 30;
  c.functions = {inf, tr};
  return c;
}

struct Line {
  double t = 0;
  std::string fn, event, inst, cap, state;
};

std::vector<Line> Parse(const std::string& log) {
  std::vector<Line> out;
  for (absl::string_view l : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    std::vector<std::string> w = absl::StrSplit(l, ' ');
    Line x;
    EXPECT_TRUE(absl::SimpleAtod(w[0], &x.t)) << l;
    x.fn = w[1];
    x.event = w[2];
    for (size_t k = 3; k < w.size(); ++k) {
      std::vector<std::string> kv = absl::StrSplit(w[k], absl::MaxSplits('=', 1));
      if (kv[0] == "inst")
        x.inst = kv[1];
      if (kv[0] == "cap")
        x.cap = kv[1];
      if (kv[0] == "state")
        x.state = kv[1];
    }
    out.push_back(x);
  }
  return out;
}

constexpr double kBurstStart = 30;  // dilu_burst_rps.txt: 30 x 20, 40 x 90, 30 x 20 req/s
constexpr double kPeriod = 0.005;

// Lifecycle and share lines only (batch lines would make the golden ~3x longer).
std::string Filtered(const std::string& log) {
  std::string out;
  for (absl::string_view l : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    if (l.find(" batch_") == absl::string_view::npos)
      absl::StrAppend(&out, l, "\n");
  }
  return out;
}

TEST(DiluGoldenTest, BurstScalesUpInPeriodsAndOutAfterTheWindowFills) {
  auto perf = core::PerfModel::BuiltIn();
  StringTimelineSink log;
  auto r = RunSimulation(DiluBurstConfig(), PolicyConfig{"dilu", "", {}}, WorkloadVariant{}, *perf,
                         "dilu_burst.yaml", &log);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<Line> lines = Parse(log.text());
  // Steady iteration time: the shortest batch of inst 0 before the burst.
  double steady = 1e9, start = -1, stretched = -1;
  for (const Line& l : lines) {
    if (l.fn != "inf" || l.inst != "0")
      continue;
    if (l.event == "batch_start")
      start = l.t;
    if (l.event == "batch_done" && start >= 0) {
      if (l.t < kBurstStart)
        steady = std::min(steady, l.t - start);
      else if (stretched < 0 && l.t - start > 1.6 * steady)  // Delta T > eta_violation
        stretched = l.t;
    }
  }
  ASSERT_GT(stretched, 0) << "no stretched iteration after the burst";
  // (a) scale-up: the first EMERGENCY share line of inst 0 after the burst starts raises it to its
  // limit and squeezes the trainer below its request at the same instant.
  const Line* up = nullptr;
  for (const Line& l : lines) {
    if (up == nullptr && l.t >= kBurstStart && l.event == "share" && l.inst == "0" &&
        l.state == "EMERGENCY")
      up = &l;
    if (up != nullptr && l.t == up->t && l.fn == "train") {
      EXPECT_LT(std::stod(l.cap), 0.12) << "trainer not squeezed at " << l.t;
    }
  }
  ASSERT_NE(up, nullptr) << "no EMERGENCY after the burst";
  EXPECT_EQ(up->cap, "0.600");
  // The controller averages KLCs over klc_span_periods (10) of busy time, so it reacts within
  // that span plus the span of the stretched batches it averages over, not within one period.
  std::printf("steady %.4f s, first stretched iteration ends %.6f, EMERGENCY at %.6f"
              " (%.0f periods)\n",
              steady, stretched, up->t, (up->t - stretched) / kPeriod);
  EXPECT_LE(up->t - stretched, 40 * kPeriod);
  // (b) scale-out only after >= phi_out = 20 one-second samples above capacity.
  const Line* out = nullptr;
  for (const Line& l : lines) {
    if (out == nullptr && l.fn == "inf" && l.event == "place" && l.inst != "0")
      out = &l;
  }
  ASSERT_NE(out, nullptr) << "no scale-out";
  EXPECT_GE(out->t, kBurstStart + 19);
  EXPECT_LE(out->t, kBurstStart + 21);
  // Golden diff (lifecycle + share lines).
  const std::string got = Filtered(log.text());
  const std::string path = SourceDir() + "/src/sim/engine/testdata/dilu_burst.golden";
  if (std::getenv("SLUICE_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string want = ReadFile(path);
  ASSERT_FALSE(want.empty()) << "missing " << path << " (run scripts/update-goldens)";
  EXPECT_TRUE(want == got) << "dilu_burst.golden differs: scripts/update-goldens, review the diff";
}

}  // namespace
}  // namespace sluice::sim
