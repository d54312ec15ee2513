// Engine scenarios worked by hand: batching (max batch, max queue delay), cold starts (storage vs
// host cache), the lifecycle (legal sequence in the event log, illegal transitions abort),
// requests held during cold starts, training jobs gated by the slowest worker, vertical
// controller ticks, determinism, and the M/M/1 validation against theory.
#include "sim/engine/engine.h"

#include <cmath>
#include <memory>

#include "gtest/gtest.h"

#include "sim/engine/engine_test_util.h"
#include "sim/engine/instance.h"

namespace sluice::sim {
namespace {

using core::SmQuota;
using testing::FakeFunction;
using testing::FakePolicyOptions;
using testing::HasLine;
using testing::RunFake;
using testing::SmallConfig;
using testing::Trace;

TEST(InstanceTest, LegalTransitionsAreExactlyTheDocumentedOnes) {
  using S = InstanceState;
  const S all[] = {S::kCold, S::kLoading, S::kWarm, S::kDraining, S::kGone};
  int legal = 0;
  for (S from : all) {
    for (S to : all)
      legal += IsLegalTransition(from, to) ? 1 : 0;
  }
  EXPECT_EQ(legal, 5);
  EXPECT_TRUE(IsLegalTransition(S::kCold, S::kLoading));
  EXPECT_TRUE(IsLegalTransition(S::kLoading, S::kWarm));
  EXPECT_TRUE(IsLegalTransition(S::kLoading, S::kDraining));
  EXPECT_TRUE(IsLegalTransition(S::kWarm, S::kDraining));
  EXPECT_TRUE(IsLegalTransition(S::kDraining, S::kGone));
}

TEST(InstanceDeathTest, IllegalTransitionAborts) {
  Instance inst(common::InstanceId(7), 0, {});
  EXPECT_DEATH(inst.TransitionTo(InstanceState::kWarm), "illegal instance transition cold -> warm");
  inst.TransitionTo(InstanceState::kLoading);
  inst.TransitionTo(InstanceState::kWarm);
  EXPECT_DEATH(inst.TransitionTo(InstanceState::kGone), "warm -> gone");
}

TEST(EngineTest, BatchStartsWhenFullOrWhenTheOldestHasWaitedMaxDelay) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(100), absl::Milliseconds(10));
  SimConfig c = SmallConfig();
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("batch", {0, 0, 0, 0, 0, 0, 5}));
  f.max_batch = 4;
  f.max_queue_delay = absl::Seconds(1);
  c.functions = {f};
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::string& log = out->log;
  // Four at t=0 fill a batch (130 ms); the two left wait for the oldest's 1 s deadline.
  EXPECT_TRUE(HasLine(log, "0.000000 f0 batch_start inst=0 size=4")) << log;
  EXPECT_TRUE(HasLine(log, "0.130000 f0 batch_done inst=0 size=4")) << log;
  EXPECT_TRUE(HasLine(log, "1.000000 f0 batch_start inst=0 size=2")) << log;
  EXPECT_TRUE(HasLine(log, "1.110000 f0 batch_done inst=0 size=2")) << log;
  // A lone request waits the full delay, then runs alone for 100 ms.
  EXPECT_TRUE(HasLine(log, "6.000000 f0 batch_start inst=0 size=1")) << log;
  const FunctionResult& r = out->result.functions[0];
  EXPECT_EQ(r.requests, 7);
  EXPECT_EQ(r.completed, 7);
  EXPECT_NEAR(r.p50_ms, 130, 1e-6);
  EXPECT_NEAR(r.p99_ms, 1110, 1e-6);
  EXPECT_NEAR(r.svr, 3.0 / 7, 1e-12);  // 1110, 1110 and 1100 ms exceed the 150 ms SLO
}

TEST(EngineTest, ColdStartLoadsFromStorageThenFromTheHostCache) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(100), absl::ZeroDuration(),
                                    absl::Milliseconds(100), 0, core::Bytes::GiB(2));
  SimConfig c = SmallConfig();
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("cold", {0, 1.5}));
  f.initial_instances = 0;
  f.min_instances = 0;
  c.functions = {f};
  FakePolicyOptions o;
  const absl::Time t0 = absl::UnixEpoch();
  o.scripts = {
      {{t0 + absl::Seconds(1), 1}, {t0 + absl::Seconds(6), 0}, {t0 + absl::Seconds(7), 1}}};
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::string& log = out->log;
  // 2 s container + 2 GiB at 1 GiB/s; then 2 s + 2 GiB at 16 GiB/s from the host cache.
  EXPECT_TRUE(HasLine(log, "1.000000 f0 place inst=0 gpus=0")) << log;
  EXPECT_TRUE(HasLine(log, "1.000000 f0 cold_start inst=0 load_s=4.000000 source=storage"));
  EXPECT_TRUE(HasLine(log, "5.000000 f0 warm inst=0")) << log;
  EXPECT_TRUE(HasLine(log, "6.000000 f0 drain inst=0 outstanding=0")) << log;
  EXPECT_TRUE(HasLine(log, "6.000000 f0 gone inst=0")) << log;
  EXPECT_TRUE(HasLine(log, "7.000000 f0 cold_start inst=1 load_s=2.125000 source=host_cache"));
  EXPECT_TRUE(HasLine(log, "9.125000 f0 warm inst=1")) << log;
  const FunctionResult& r = out->result.functions[0];
  EXPECT_EQ(r.cold_starts, 2);
  // Both requests were held until the instance was warm at 5 s, then ran 100 ms each in turn:
  // 5.1 - 0 and 5.2 - 1.5 s.
  EXPECT_EQ(r.completed, 2);
  EXPECT_NEAR(r.p50_ms, 3700, 1e-6);
  EXPECT_NEAR(r.p99_ms, 5100, 1e-6);

  c.cold_start.host_cache = false;
  out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(HasLine(out->log, "7.000000 f0 cold_start inst=1 load_s=4.000000 source=storage"));
}

TEST(EngineTest, LifecycleSequenceIsLoggedInOrder) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig();
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("life", {0}));
  f.initial_instances = 0;
  f.min_instances = 0;
  c.functions = {f};
  FakePolicyOptions o;
  o.scripts = {
      {{absl::UnixEpoch() + absl::Seconds(1), 1}, {absl::UnixEpoch() + absl::Seconds(8), 0}}};
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok());
  const std::string& log = out->log;
  size_t pos = 0;
  for (const char* ev : {"place inst=0", "cold_start inst=0", "warm inst=0", "batch_start inst=0",
                         "batch_done inst=0", "drain inst=0", "gone inst=0"}) {
    const size_t at = log.find(ev, pos);
    ASSERT_NE(at, std::string::npos) << ev << " missing after offset " << pos << "\n" << log;
    pos = at;
  }
}

TEST(EngineTest, DrainFinishesTheQueueBeforeGoingAway) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig();
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("drain", {0, 0.95, 0.95, 0.95}));
  c.functions = {f};
  FakePolicyOptions o;
  o.scripts = {{{absl::UnixEpoch() + absl::Seconds(1), 0}}};
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(HasLine(out->log, "1.000000 f0 drain inst=0 outstanding=3")) << out->log;
  EXPECT_TRUE(HasLine(out->log, "1.250000 f0 gone inst=0")) << out->log;
  // One batch in flight (0.95 - 1.05 s) and two queued behind it.
  EXPECT_EQ(out->result.functions[0].completed, 4);
  EXPECT_EQ(out->result.functions[0].dropped, 0);
}

TEST(EngineTest, RequestsWithNoInstanceAtTheHorizonAreDropped) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig();
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("drop", {0, 1, 2}));
  f.initial_instances = 0;
  f.min_instances = 0;
  c.functions = {f};
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok());
  const FunctionResult& r = out->result.functions[0];
  EXPECT_EQ(r.requests, 3);
  EXPECT_EQ(r.dropped, 3);
  EXPECT_DOUBLE_EQ(r.svr, 1.0);
  EXPECT_TRUE(HasLine(out->log, "10.000000 f0 drop n=3 reason=no_instance")) << out->log;
}

TEST(EngineTest, TrainingStepIsGatedByTheSlowestWorker) {
  auto perf = testing::MakeFakePerf();  // batch 100 ms, iteration 100 ms at share 1
  SimConfig c = SmallConfig();
  FunctionConfig inf = FakeFunction("inf", SmQuota{0.5, 1}, Trace("train_inf", {0}));
  FunctionConfig tr = FakeFunction("train", SmQuota{0.5, 1}, WorkloadSpec{});
  tr.training = TrainingConfig{};
  tr.training->workers = 2;
  tr.training->iterations = 10;
  c.functions = {inf, tr};
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  // Worker on GPU 0 shares with the inference batch (0.5 each) for the first 200 ms, which is
  // exactly the first iteration; the other 9 run at full share: JCT 1.1 s.
  EXPECT_TRUE(HasLine(out->log, "0.000000 train place inst=1 gpus=0,1")) << out->log;
  const FunctionResult& t = out->result.functions[1];
  EXPECT_NEAR(t.jct_s, 1.1, 1e-9);
  EXPECT_NEAR(t.training_iters_per_s, 10 / 1.1, 1e-6);
  EXPECT_NEAR(out->result.functions[0].p50_ms, 200, 1e-6);
  EXPECT_TRUE(HasLine(out->log, "1.100000 train gone inst=1")) << out->log;
}

TEST(EngineTest, LateTrainingJobColdStartsWithAFullCopyPerWorker) {
  auto perf = testing::MakeFakePerf();  // 1 GiB of parameters
  SimConfig c = SmallConfig();
  FunctionConfig tr = FakeFunction("train", SmQuota{1, 1}, WorkloadSpec{});
  tr.training = TrainingConfig{};
  tr.training->workers = 2;
  tr.training->iterations = 10;
  tr.training->submit_at = absl::Seconds(1);
  c.functions = {tr};
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  // 2 s container + 2 x 1 GiB on one node at 1 GiB/s, then 10 x 100 ms.
  EXPECT_NEAR(out->result.functions[0].jct_s, 5.0, 1e-9);
  EXPECT_EQ(out->result.functions[0].cold_starts, 1);
}

TEST(EngineTest, VerticalControllerCapsSharesAndStopsTickingWhenIdle) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig(1, 1);
  FunctionConfig f = FakeFunction("f0", SmQuota{0.5, 1}, Trace("vert", {0, 0}));
  f.initial_instances = 2;
  f.min_instances = 2;
  c.functions = {f};
  int issues = 0;
  FakePolicyOptions o;
  o.controller_period = absl::Milliseconds(5);
  o.controller_cap = 0.25;
  o.issue_calls = &issues;
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok());
  // 5 ms at share 0.5 (2.5 % done), then capped at 0.25: 0.975 / 2.5 per s = 390 ms more.
  EXPECT_NEAR(out->result.functions[0].p50_ms, 395, 1e-6);
  EXPECT_NEAR(out->result.functions[0].p99_ms, 395, 1e-6);
  // Ticks while busy (~79) plus the one that sees the idle period; none afterwards.
  EXPECT_GE(issues, 78);
  EXPECT_LE(issues, 81);
}

TEST(EngineTest, SameSeedSameResultDifferentSeedDifferentResult) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(20), absl::Milliseconds(2));
  SimConfig c = SmallConfig(2, 2);
  c.horizon = absl::Seconds(30);
  FunctionConfig a = FakeFunction("a", SmQuota{0.4, 0.8}, testing::Poisson(30));
  a.max_batch = 4;
  a.max_queue_delay = absl::Milliseconds(5);
  FunctionConfig b = FakeFunction("b", SmQuota{0.3, 0.6}, testing::Poisson(20));
  b.min_instances = 0;
  c.functions = {a, b};
  auto run = [&](uint64_t seed) {
    c.seed = seed;
    FakePolicyOptions o;
    o.scripts = {
        {},
        {{absl::UnixEpoch() + absl::Seconds(3), 2}, {absl::UnixEpoch() + absl::Seconds(20), 0}}};
    o.controller_period = absl::Milliseconds(5);
    auto out = RunFake(c, o, *perf);
    EXPECT_TRUE(out.ok());
    return out.ok() ? testing::Dump(out->result) + out->log : std::string();
  };
  const std::string first = run(7);
  EXPECT_EQ(first, run(7));
  EXPECT_NE(first, run(8));
}

TEST(EngineTest, MM1MeanLatencyMatchesTheoryWithinThreePercent) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig(1, 1);
  c.horizon = absl::Seconds(2000);
  c.report_theory_mm1 = true;
  c.seed = 42;
  FunctionConfig f = FakeFunction("mm1", SmQuota{1, 1}, testing::Poisson(50));
  f.exponential_service_mean = absl::Milliseconds(10);  // mu = 100/s
  f.max_instances = 1;
  c.functions = {f};
  auto out = RunFake(c, FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const FunctionResult& r = out->result.functions[0];
  ASSERT_TRUE(r.theory_mean_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.theory_mean_ms, 20.0);
  EXPECT_GT(r.requests, 95000);
  EXPECT_EQ(r.cold_starts, 0);
  EXPECT_NEAR(r.mean_ms, 20.0, 0.03 * 20.0) << "seed " << c.seed;
}

}  // namespace
}  // namespace sluice::sim
