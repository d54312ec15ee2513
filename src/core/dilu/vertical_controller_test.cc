// DiluVerticalController: hand-worked periods of Algorithm 2 (MaxTokens = 1000, shares in the
// comments), EMERGENCY within one period of a stretched KLC, owner-only clearing, work
// conservation, quota changes, the 1 % floor, and the static "-VS" controller.
#include "core/dilu/vertical_controller.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

InstanceActivity Inst(int id, double req, double lim, bool slo, bool llm = false) {
  InstanceActivity a;
  a.instance = InstanceId(id);
  a.quota = {req, lim};
  a.slo_sensitive = slo;
  a.llm = llm;
  return a;
}

class Gpu {
 public:
  explicit Gpu(std::vector<InstanceActivity> instances, VerticalConfig c = {})
      : ctl(*DiluVerticalController::Create(c)), inst(std::move(instances)) {}
  // One period: sets each instance's blocks and returns the tokens issued.
  std::vector<int64_t> Step(const std::vector<int64_t>& blocks) {
    for (size_t i = 0; i < inst.size(); ++i)
      inst[i].blocks_launched = blocks[i];
    std::vector<int64_t> tokens(inst.size(), -1);
    ctl->Issue(now, 1000, inst, tokens);
    now += absl::Milliseconds(5);
    return tokens;
  }
  std::unique_ptr<DiluVerticalController> ctl;
  std::vector<InstanceActivity> inst;
  absl::Time now = absl::UnixEpoch();
};

// A: SLO <0.3, 0.6>; B: best effort <0.2, 0.8>. A runs KLCs of 5 periods with 5 idle periods
// (T_min = 5); B is always busy. Returns the GPU after `cycles` cycles.
Gpu WarmedUp(int cycles, VerticalConfig c = {}) {
  Gpu g({Inst(1, 0.3, 0.6, true), Inst(2, 0.2, 0.8, false)}, c);
  for (int k = 0; k < cycles * 10; ++k)
    g.Step({k % 10 < 5 ? 100 : 0, 100});
  return g;
}

TEST(VerticalControllerTest, WarmUpRecoversBestEffortToItsLimit) {
  // Delta T stays 0 (KLC = T_min = 5) and B is busy: branch d, RECOVERY. B's share grows x1.3
  // every 5th RECOVERY period: 0.2 -> 0.26 -> 0.338 -> 0.4394 -> 0.5712 -> 0.7426 -> 0.8 (cap).
  Gpu g = WarmedUp(8);
  EXPECT_EQ(g.ctl->state(), GpuShareState::kRecovery);
  // Next period, A busy: A = request 0.3; pool = 1 - 0.3 - 0.8 < 0, nothing to conserve.
  EXPECT_EQ(g.Step({100, 100}), (std::vector<int64_t>{300, 800}));
}

TEST(VerticalControllerTest, SloBurstRaisesEmergencyWithinOnePeriodAndSqueezesBestEffort) {
  Gpu g = WarmedUp(8);
  // A's KLC now runs on. Run r: T_cur = max(r, 5); Delta T = (T_cur - 5) / 5.
  for (int r = 1; r <= 8; ++r) {
    auto t = g.Step({100, 100});
    // r <= 5: 0 -> RECOVERY (d); r = 6, 7, 8: 0.2, 0.4, 0.6 (not > 0.6) -> CONTENTION, B keeps 0.8.
    ASSERT_EQ(g.ctl->state(), r <= 5 ? GpuShareState::kRecovery : GpuShareState::kContention)
        << "run " << r;
    ASSERT_EQ(t[1], 800) << "run " << r;
  }
  // r = 9: Delta T = 0.8 > 0.6 -> EMERGENCY in this very period. A = limit 0.6;
  // B = min(0.2, 0.8) / (1 + 0.8) = 0.1111 -> 111 tokens. Pool 0.289 is not given to B.
  EXPECT_EQ(g.Step({100, 100}), (std::vector<int64_t>{600, 111}));
  EXPECT_EQ(g.ctl->state(), GpuShareState::kEmergency);
  EXPECT_EQ(g.ctl->emergency_owner(), InstanceId(1));
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0.8);
  // r = 10: Delta T = 1.0, B = min(0.2, 0.1111) / 2 = 0.0556 -> 55.
  EXPECT_EQ(g.Step({100, 100}), (std::vector<int64_t>{600, 55}));
  // Many more periods: B sits on the 1 % floor (10 tokens), A keeps its limit.
  std::vector<int64_t> t;
  for (int k = 0; k < 20; ++k)
    t = g.Step({100, 100});
  EXPECT_EQ(t, (std::vector<int64_t>{600, 10}));
}

TEST(VerticalControllerTest, EmergencyClearsAfterANormalKlcAndBestEffortGrowsBack) {
  VerticalConfig strict;  // without work conservation, to watch Algorithm 2's own recovery
  strict.work_conserving = false;
  Gpu g = WarmedUp(8, strict);
  for (int r = 1; r <= 12; ++r)
    g.Step({100, 100});  // KLC of 12: EMERGENCY from run 9
  // A idles: the KLC of 12 is recorded; Delta T = (12 - 5) / 5 = 1.4 keeps EMERGENCY while
  // A's window still holds blocks (the stretched cycle is the latest evidence).
  for (int k = 0; k < 5; ++k)
    g.Step({0, 100});
  EXPECT_EQ(g.ctl->state(), GpuShareState::kEmergency);
  // A normal KLC of 5: it ends (last KLC = 5, Delta T = 0) -> RECOVERY, set by the owner.
  for (int k = 0; k < 5; ++k)
    g.Step({100, 100});
  g.Step({0, 100});
  EXPECT_EQ(g.ctl->state(), GpuShareState::kRecovery);
  // B was on the floor (0.01); in RECOVERY it grows x1.3 every 5th period.
  std::vector<int64_t> t;
  for (int k = 0; k < 4; ++k)
    t = g.Step({0, 100});
  const int64_t before = t[1];
  for (int k = 0; k < 5; ++k)
    t = g.Step({0, 100});
  EXPECT_EQ(g.ctl->state(), GpuShareState::kRecovery);
  EXPECT_GT(t[1], before);
}

TEST(VerticalControllerTest, OnlyTheOwnerClearsEmergencyAndItsDepartureDoes) {
  // A and C are SLO-sensitive; B best effort. A's KLC stretches; C idles.
  Gpu g({Inst(1, 0.3, 0.6, true), Inst(2, 0.2, 0.8, false), Inst(3, 0.2, 0.4, true)});
  for (int k = 0; k < 40; ++k)
    g.Step({k % 10 < 5 ? 100 : 0, 100, k % 10 < 5 ? 50 : 0});
  for (int r = 1; r <= 9; ++r)
    g.Step({100, 100, r <= 5 ? 50 : 0});
  ASSERT_EQ(g.ctl->state(), GpuShareState::kEmergency);
  ASSERT_EQ(g.ctl->emergency_owner(), InstanceId(1));
  // C's own branch is RECOVERY/CONTENTION, but it cannot clear A's EMERGENCY.
  for (int k = 0; k < 3; ++k) {
    g.Step({100, 100, 50});
    EXPECT_EQ(g.ctl->state(), GpuShareState::kEmergency);
    EXPECT_EQ(g.ctl->emergency_owner(), InstanceId(1));
  }
  // A leaves the GPU: nobody owns EMERGENCY any more -> RECOVERY at once.
  g.inst.erase(g.inst.begin());
  g.Step({100, 50});
  EXPECT_NE(g.ctl->state(), GpuShareState::kEmergency);
}

TEST(VerticalControllerTest, LlmInstancesUseTheTighterThreshold) {
  for (bool llm : {false, true}) {
    Gpu g({Inst(1, 0.3, 0.6, true, llm), Inst(2, 0.2, 0.8, false)});
    for (int k = 0; k < 40; ++k)
      g.Step({k % 10 < 5 ? 100 : 0, 100});
    for (int r = 1; r <= 7; ++r)
      g.Step({100, 100});  // Delta T = (7 - 5) / 5 = 0.4
    EXPECT_EQ(g.ctl->state(), llm ? GpuShareState::kEmergency : GpuShareState::kContention);
  }
}

TEST(VerticalControllerTest, IdleCoRunnerTokensFlowToTheBusyOneWithinThreePeriods) {
  // B (best effort) busy, A (SLO) stops launching: A's share is free for B up to its limit.
  Gpu g = WarmedUp(2);
  for (int k = 0; k < 5; ++k)
    g.Step({100, 100});  // B's Algorithm-2 share is below 0.8 here
  std::vector<int64_t> t;
  for (int k = 0; k < 3; ++k)
    t = g.Step({0, 100});
  EXPECT_EQ(t[1], 800);
  EXPECT_EQ(t[0], 300);  // the idle SLO instance keeps its request
  // The other way round: A busy, B idle -> A reaches its limit 0.6.
  Gpu h({Inst(1, 0.3, 0.6, true), Inst(2, 0.2, 0.8, false)});
  for (int k = 0; k < 10; ++k)
    h.Step({100, 100});
  for (int k = 0; k < 3; ++k)
    t = h.Step({100, 0});
  EXPECT_EQ(t[0], 600);
  // Without work conservation B would still creep up by x1.3 every 5th period.
  VerticalConfig strict;
  strict.work_conserving = false;
  Gpu s = WarmedUp(2, strict);
  for (int k = 0; k < 3; ++k)
    t = s.Step({0, 100});
  EXPECT_LT(t[1], 800);
}

TEST(VerticalControllerTest, PureAlgorithmTwoGrowsALoneSloInstance) {
  // Alone, busy: RW[others] is empty -> RECOVERY, issue = last x 1.3 (line 19), capped at limit:
  // 0.3 x 1.3 = 0.39, 0.507, 0.6.
  VerticalConfig c;
  c.work_conserving = false;
  Gpu g({Inst(1, 0.3, 0.6, true)}, c);
  EXPECT_EQ(g.Step({100})[0], 390);
  EXPECT_EQ(g.Step({100})[0], 507);
  EXPECT_EQ(g.Step({100})[0], 600);
  EXPECT_EQ(g.ctl->state(), GpuShareState::kRecovery);
}

TEST(VerticalControllerTest, WithoutSloInstancesStateIsNoneAndBestEffortGetsLimits) {
  Gpu g({Inst(1, 0.2, 0.5, false), Inst(2, 0.3, 0.7, false)});
  EXPECT_EQ(g.Step({10, 10}), (std::vector<int64_t>{500, 700}));
  EXPECT_EQ(g.ctl->state(), GpuShareState::kNone);
}

TEST(VerticalControllerTest, QuotaChangeTakesEffectInTheNextIssue) {
  Gpu g({Inst(1, 0.2, 0.8, false)});
  EXPECT_EQ(g.Step({10})[0], 800);
  g.inst[0].quota = {0.2, 0.4};
  EXPECT_EQ(g.Step({10})[0], 400);
  // An SLO instance in RECOVERY (branch d) gets its request; it follows a new request at once.
  VerticalConfig strict;
  strict.work_conserving = false;
  Gpu h({Inst(1, 0.3, 0.6, true), Inst(2, 0.2, 0.8, false)}, strict);
  h.Step({100, 100});
  EXPECT_EQ(h.Step({100, 100})[0], 300);
  h.inst[0].quota = {0.5, 0.6};
  EXPECT_EQ(h.Step({100, 100})[0], 500);
}

TEST(VerticalControllerTest, RejectsBadConfigAndForgetsInstances) {
  VerticalConfig bad;
  bad.eta_increase = 0.9;
  EXPECT_FALSE(DiluVerticalController::Create(bad).ok());
  bad = {};
  bad.rate_window = 0;
  EXPECT_FALSE(DiluVerticalController::Create(bad).ok());
  Gpu g = WarmedUp(2);
  g.ctl->Forget(InstanceId(1));
  EXPECT_DOUBLE_EQ(g.ctl->delta_t(InstanceId(1)), 0);
  g.inst.erase(g.inst.begin());
  EXPECT_EQ(g.Step({100})[0], 800);  // alone again: NONE, limit
}

TEST(VerticalControllerTest, StaticControllerIssuesRequests) {
  StaticRequestController s(absl::Milliseconds(5), 0.01);
  std::vector<InstanceActivity> inst = {Inst(1, 0.3, 0.6, true), Inst(2, 0.001, 0.8, false)};
  std::vector<int64_t> t(2);
  s.Issue(absl::UnixEpoch(), 1000, inst, t);
  EXPECT_EQ(t, (std::vector<int64_t>{300, 10}));
  EXPECT_EQ(s.period(), absl::Milliseconds(5));
}

}  // namespace
}  // namespace sluice::core
