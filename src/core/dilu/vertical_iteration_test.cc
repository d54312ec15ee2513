// DiluVerticalController with iteration boundaries (InstanceActivity::cycles_completed >= 0):
// hand-worked periods (MaxTokens = 1000) for back-to-back batches, a stretched iteration, the
// recovery of a squeezed training co-runner, sub-period resolution and the sliding T_min.
// A: SLO-sensitive <0.3, 0.6>, always busy; B: best-effort training <0.2, 0.8>, always busy.
#include <cstdint>
#include <vector>

#include "core/dilu/vertical_controller.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

class Gpu {
 public:
  explicit Gpu(VerticalConfig c = {}) : ctl(*DiluVerticalController::Create(c)) {
    for (int id : {1, 2}) {
      InstanceActivity a;
      a.instance = InstanceId(id);
      a.quota = id == 1 ? SmQuota{0.3, 0.6} : SmQuota{0.2, 0.8};
      a.slo_sensitive = id == 1;
      a.blocks_launched = 100;
      inst.push_back(a);
    }
  }
  // One period in which A ended `a_cycles` iterations and B `b_cycles` (-1 = unknown).
  std::vector<int64_t> Step(int64_t a_cycles, int64_t b_cycles = 0) {
    inst[0].cycles_completed = a_cycles;
    inst[1].cycles_completed = b_cycles;
    std::vector<int64_t> tokens(2, -1);
    ctl->Issue(now, 1000, inst, tokens);
    now += absl::Milliseconds(5);
    ++period;
    return tokens;
  }
  // A's batches take `len` periods back to back: one end every len-th period.
  std::vector<int64_t> Steps(int n, int len) {
    std::vector<int64_t> t;
    for (int k = 0; k < n; ++k)
      t = Step((period + 1) % len == 0 ? 1 : 0, period % 3 == 2 ? 1 : 0);
    return t;
  }
  std::unique_ptr<DiluVerticalController> ctl;
  std::vector<InstanceActivity> inst;
  absl::Time now = absl::UnixEpoch();
  int64_t period = 0;
};

TEST(VerticalIterationTest, BackToBackBatchesOfConstantDurationStayOutOfEmergency) {
  // Ends at periods 5, 10, 15, ...: the first KLC is (15 - 5) / 2 = 5 (a span of 10), then
  // (20 - 10) / 2 = 5, ...; the busy
  // time since the last end is at most 4 < 5, so Delta T = 0: branch d, RECOVERY. B grows to its
  // limit (x1.3 every 5th period, work conservation first): A 0.3, B 0.8.
  Gpu g;
  for (int k = 0; k < 200; ++k) {
    g.Steps(1, 5);
    ASSERT_NE(g.ctl->state(), GpuShareState::kEmergency) << "period " << g.period;
    ASSERT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0) << "period " << g.period;
  }
  EXPECT_EQ(g.Steps(1, 5), (std::vector<int64_t>{300, 800}));
  // Without boundaries (-1) the KLC is a run of busy periods: after a warm-up with gaps
  // (T_min = 5), back-to-back batches are one endless KLC: EMERGENCY, B on the 1 % floor.
  Gpu u;
  for (int k = 0; k < 40; ++k) {
    u.inst[0].blocks_launched = k % 10 < 5 ? 100 : 0;
    u.Step(-1, -1);
  }
  u.inst[0].blocks_launched = 100;
  std::vector<int64_t> t;
  for (int k = 0; k < 20; ++k)
    t = u.Step(-1, -1);
  EXPECT_EQ(u.ctl->state(), GpuShareState::kEmergency);
  EXPECT_EQ(t, (std::vector<int64_t>{600, 10}));
}

TEST(VerticalIterationTest, SeveralEndsPerPeriodGiveSubPeriodKlcs) {
  // Iterations of 0.4 periods: 2, 3, 2, 3, ... ends. Over spans of 10 or 11 busy periods the KLC
  // is 10 / 25 = 0.4, 11 / 27 = 0.407 or 11 / 28 = 0.393, so Delta T <= 0.407 / 0.393 - 1 = 0.036.
  Gpu g;
  for (int k = 0; k < 200; ++k) {
    g.Step(k % 2 == 0 ? 2 : 3);
    ASSERT_LT(g.ctl->delta_t(InstanceId(1)), 0.04) << "period " << k;
    ASSERT_EQ(g.ctl->state(), GpuShareState::kRecovery) << "period " << k;
  }
}

TEST(VerticalIterationTest, StretchedIterationRaisesEmergencyWithinOnePeriod) {
  Gpu g;
  g.Steps(40, 5);  // last end at period 40, T_min = 5
  // A's iteration runs on: r busy periods since the end, Delta T = (max(5, r) - 5) / 5.
  for (int r = 1; r <= 8; ++r) {
    g.Step(0, 0);
    ASSERT_NE(g.ctl->state(), GpuShareState::kEmergency) << "r " << r;
  }
  // r = 9: Delta T = 0.8 > 0.6 in this very period. A = limit; B = min(0.2, 0.8) / 1.8 = 0.111.
  EXPECT_EQ(g.Step(0, 0), (std::vector<int64_t>{600, 111}));
  EXPECT_EQ(g.ctl->state(), GpuShareState::kEmergency);
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0.8);
}

TEST(VerticalIterationTest, TrainingGetsTokensBackWhenIterationsAreNormalAgain) {
  Gpu g;
  g.Steps(40, 5);
  for (int r = 1; r <= 11; ++r)
    g.Step(0, 0);
  g.Step(1, 0);  // period 52 ends the 12-period iteration: ends {40, 52}, KLC 12, Delta T 1.4
  ASSERT_EQ(g.ctl->state(), GpuShareState::kEmergency);
  // Normal 5-period iterations. Period 57: KLC = (57 - 40) / 2 = 8.5, Delta T 0.7: EMERGENCY.
  for (int k = 0; k < 4; ++k)
    g.Step(0, 0);
  g.Step(1, 0);
  ASSERT_EQ(g.ctl->state(), GpuShareState::kEmergency);
  // Period 62: the end at 52 is 10 back, KLC = (62 - 52) / 2 = 5, Delta T 0: RECOVERY set by
  // the owner. B sat on the floor (0.01); work conservation tops A up to 0.6 first, then B gets
  // the rest: 1 - 0.6 = 0.4.
  for (int k = 0; k < 4; ++k)
    g.Step(0, 0);
  const std::vector<int64_t> t = g.Step(1, 0);
  EXPECT_EQ(g.ctl->state(), GpuShareState::kRecovery);
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0);
  EXPECT_EQ(t[0], 600);
  EXPECT_GE(t[1], 399);
  // Algorithm 2's own growth (x1.3 every 5th RECOVERY period) then takes B to its limit.
  EXPECT_EQ(g.Steps(200, 5), (std::vector<int64_t>{300, 800}));
}

TEST(VerticalIterationTest, SlidingMinimumAdoptsALongerIterationTimeThePaperMinimumDoesNot) {
  // Batches of 5 periods, then (a larger batch) of 9: Delta T = (9 - 5) / 5 = 0.8 > 0.6. With a
  // 200-period window the 5-period KLCs expire and T_min becomes 9; the all-time minimum keeps
  // the GPU in EMERGENCY.
  for (int window : {200, 0}) {
    VerticalConfig c;
    c.klc_min_window = window;
    Gpu g(c);
    g.Steps(100, 5);
    g.Steps(20, 9);
    EXPECT_EQ(g.ctl->state(), GpuShareState::kEmergency) << "window " << window;
    g.Steps(300, 9);
    if (window > 0) {
      EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0);
      EXPECT_NE(g.ctl->state(), GpuShareState::kEmergency);
    } else {
      EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0.8);
      EXPECT_EQ(g.ctl->state(), GpuShareState::kEmergency);
    }
  }
}

TEST(VerticalIterationTest, TheMinimumSlidesWhileTheInstanceIsIdle) {
  // As above, then A idles (no blocks, no ends) while B works. Its old 5-period KLCs leave the
  // 200-period window during the idle stretch: Delta T reads (8.5 - 5) / 5 early in it (the last
  // KLC's span reaches into a 5-period batch) and 0 once T_min is that last KLC, although A's
  // idle periods skip the KLC bookkeeping (Observe).
  VerticalConfig c;
  c.klc_min_window = 200;
  Gpu g(c);
  g.Steps(100, 5);
  g.Steps(20, 9);
  g.inst[0].blocks_launched = 0;
  for (int k = 0; k < 30; ++k)
    g.Step(0, k % 3 == 2 ? 1 : 0);
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0.7);
  EXPECT_NE(g.ctl->state(), GpuShareState::kEmergency);  // A idle a whole window: branch a
  for (int k = 0; k < 220; ++k)
    g.Step(0, k % 3 == 2 ? 1 : 0);
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0);
  g.inst[0].blocks_launched = 100;  // back to work: the same T_min
  g.Step(0);
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0);
}

TEST(VerticalIterationTest, RejectsBadKlcSettings) {
  VerticalConfig bad;
  bad.klc_span_periods = 0;
  EXPECT_FALSE(DiluVerticalController::Create(bad).ok());
  bad = {};
  bad.klc_min_window = -1;
  EXPECT_FALSE(DiluVerticalController::Create(bad).ok());
}

}  // namespace
}  // namespace sluice::core
