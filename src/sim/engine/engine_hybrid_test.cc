// The engine driving a core::HybridScaler (testing/fake_hybrid.h): the function's traits reach
// the scaler, scripted actions apply in order (a quota step, a new pod with its cold start, a
// drain), actions the cluster rejects are skipped and counted while the rest apply, a quota step
// speeds up the batch in flight without a cold start, and NextWakeup() is honoured between
// samples.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "sim/engine/engine.h"
#include "sim/engine/engine_test_util.h"
#include "sim/engine/testing/fake_hybrid.h"

namespace sluice::sim {
namespace {

using core::ScalingAction;
using core::SmQuota;
using testing::FakeFunction;
using testing::FakePolicyOptions;
using testing::FakePolicySet;
using testing::HasLine;
using testing::HybridStep;
using testing::ScriptedHybridScaler;
using testing::SmallConfig;
using testing::Trace;

absl::Time At(double s) {
  return absl::UnixEpoch() + absl::Seconds(s);
}

ScalingAction SetQuota(int64_t instance, SmQuota q) {
  ScalingAction a =
      testing::MakeAction(ScalingAction::Kind::kSetQuota, common::InstanceId(instance));
  a.quota = q;
  return a;
}

ScalingAction Add(int64_t gpu, SmQuota q, int batch = 1) {
  ScalingAction a = testing::MakeAction(ScalingAction::Kind::kAdd);
  a.gpu = core::GpuId(gpu);
  a.quota = q;
  a.batch = batch;
  return a;
}

ScalingAction Remove(int64_t instance) {
  return testing::MakeAction(ScalingAction::Kind::kRemove, common::InstanceId(instance));
}

// One engine run with a scripted hybrid scaler for every function; the engine (and with it the
// scaler) stays alive for inspection.
struct HybridRun {
  HybridRun(const SimConfig& config, std::vector<HybridStep> steps)
      : perf(testing::MakeFakePerf()) {
    FakePolicyOptions o;
    o.hybrid = [this, steps](const core::FunctionTraits& t) {
      traits = t;
      auto s = std::make_unique<ScriptedHybridScaler>(steps);
      scaler = s.get();
      return s;
    };
    auto e = Engine::Create(config, std::make_unique<FakePolicySet>(std::move(o)), "test",
                            WorkloadVariant{}, *perf, "test.yaml", &log);
    EXPECT_TRUE(e.ok()) << e.status();
    engine = *std::move(e);
    auto r = engine->Run();
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok())
      result = *std::move(r);
  }
  const FunctionResult& fn() const { return result.functions[0]; }

  std::unique_ptr<core::PerfModel> perf;
  core::FunctionTraits traits;
  ScriptedHybridScaler* scaler = nullptr;
  StringTimelineSink log;
  std::unique_ptr<Engine> engine;
  RunResult result;
};

SimConfig OneFunction(SmQuota quota, const WorkloadSpec& w) {
  SimConfig c = SmallConfig(1, 2);
  FunctionConfig f = FakeFunction("f0", quota, w);
  f.max_batch = 2;
  f.slo = absl::Milliseconds(300);
  c.functions = {f};
  return c;
}

TEST(EngineHybridTest, TraitsReachTheScaler) {
  HybridRun run(OneFunction(SmQuota{0.5, 0.5, 0.5}, Trace("traits", {0})), {});
  ASSERT_NE(run.scaler, nullptr);
  EXPECT_NE(run.traits.latency, nullptr);
  EXPECT_EQ(run.traits.max_batch, 2);
  EXPECT_EQ(run.traits.slo, absl::Milliseconds(300));
  EXPECT_EQ(run.traits.memory, core::Bytes::GiB(2));
  // Every sample before the horizon is observed (1 s ... 9 s); Decide sees the one initial pod,
  // warm, with its quota and batch.
  EXPECT_EQ(run.scaler->samples.size(), 9u);
  ASSERT_FALSE(run.scaler->calls.empty());
  const auto& pods = run.scaler->calls.front().pods;
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_TRUE(pods[0].warm);
  EXPECT_EQ(pods[0].quota, (SmQuota{0.5, 0.5, 0.5}));
  EXPECT_EQ(pods[0].batch, 2);
}

TEST(EngineHybridTest, ActionsApplyInOrder) {
  const SmQuota small{0.5, 0.5, 0.25};
  HybridRun run(
      OneFunction(SmQuota{0.5, 0.5, 0.5}, Trace("order", {0})),
      {{At(2), {SetQuota(0, SmQuota{0.5, 0.5, 1.0}), Add(1, small)}}, {At(4), {Remove(0)}}});
  const std::string log = run.log.text();
  EXPECT_TRUE(HasLine(log, "2.000000 f0 quota inst=0 request=0.500 limit=0.500 q=1.000")) << log;
  EXPECT_TRUE(HasLine(log, "2.000000 f0 place inst=1 gpus=1")) << log;
  // The node loaded the model at t = 0 already: 2 s container start + 1 GiB at 16 GiB/s.
  EXPECT_TRUE(HasLine(log, "2.000000 f0 cold_start inst=1 load_s=2.062500 source=host_cache"))
      << log;
  EXPECT_TRUE(HasLine(log, "4.000000 f0 drain inst=0 outstanding=0")) << log;
  EXPECT_TRUE(HasLine(log, "4.062500 f0 warm inst=1")) << log;
  EXPECT_EQ(run.fn().vertical_scalings, 1);
  EXPECT_EQ(run.fn().cold_starts, 1);
  EXPECT_EQ(run.fn().rejected_actions, 0);
  // At t = 3 the scaler saw both pods: the old one at q = 1, the new one loading.
  const ScriptedHybridScaler::Call* at3 = nullptr;
  for (const auto& call : run.scaler->calls) {
    if (call.now == At(3))
      at3 = &call;
  }
  ASSERT_NE(at3, nullptr);
  ASSERT_EQ(at3->pods.size(), 2u);
  EXPECT_EQ(at3->pods[0].quota.time_quota, 1.0);
  EXPECT_FALSE(at3->pods[1].warm);
  EXPECT_EQ(at3->pods[1].gpu, core::GpuId(1));
  EXPECT_EQ(at3->pods[1].quota, small);
  // The books: instance 1 alone on GPU 1, holding s x q.
  const core::GpuState& g1 = run.engine->cluster().gpu(core::GpuId(1));
  ASSERT_EQ(g1.allocations.size(), 1u);
  EXPECT_DOUBLE_EQ(g1.sum_held, 0.125);
  EXPECT_TRUE(run.engine->cluster().gpu(core::GpuId(0)).allocations.empty());
}

TEST(EngineHybridTest, RejectedActionsAreSkippedAndCounted) {
  SimConfig c = OneFunction(SmQuota{0.5, 0.5, 1.0}, Trace("rejected", {0}));
  c.functions[0].memory = core::Bytes::GiB(30);  // two do not fit one 40 GiB GPU
  HybridRun run(c, {{At(1),
                     {SetQuota(0, SmQuota{0.5, 0.5, 0.0}),  // q outside (0, 1]
                      SetQuota(9, SmQuota{0.5, 0.5, 0.5}),  // no such instance
                      Add(7, SmQuota{0.5, 0.5, 0.5}),       // no such GPU
                      Add(0, SmQuota{0.5, 0.5, 0.5}),       // GPU 0 lacks the memory
                      Add(1, SmQuota{0.5, 0.5, 0.5}, 3),    // batch above max_batch
                      Remove(42),                           // no such instance
                      Add(1, SmQuota{0.5, 0.5, 0.5})}}});   // fine
  EXPECT_EQ(run.fn().rejected_actions, 6);
  EXPECT_EQ(run.fn().cold_starts, 1);
  EXPECT_EQ(run.fn().vertical_scalings, 0);
  const std::string log = run.log.text();
  EXPECT_NE(log.find("1.000000 f0 action_rejected kind=set_quota"), std::string::npos) << log;
  EXPECT_NE(log.find("1.000000 f0 action_rejected kind=add reason=\"GPU 0 cannot host"),
            std::string::npos)
      << log;
  EXPECT_TRUE(HasLine(log, "1.000000 f0 place inst=1 gpus=1")) << log;
  EXPECT_EQ(run.engine->cluster().gpu(core::GpuId(0)).allocations[0].quota.time_quota, 1.0);
}

TEST(EngineHybridTest, QuotaStepSpeedsUpTheBatchInFlightWithoutAColdStart) {
  // 100 ms per batch at q = 1, 200 ms at q = 0.5. The request at 0.9 s is half done when the
  // step to q = 1 lands at the 1 s sample: its second half takes 50 ms.
  SimConfig c = OneFunction(SmQuota{1, 1, 0.5}, Trace("step", {0, 0.9, 2}));
  c.functions[0].max_batch = 1;
  HybridRun run(c, {{At(1), {SetQuota(0, SmQuota{1, 1, 1})}}});
  const std::string log = run.log.text();
  EXPECT_TRUE(HasLine(log, "0.200000 f0 batch_done inst=0 size=1")) << log;
  EXPECT_TRUE(HasLine(log, "1.050000 f0 batch_done inst=0 size=1")) << log;
  EXPECT_TRUE(HasLine(log, "2.100000 f0 batch_done inst=0 size=1")) << log;
  EXPECT_EQ(run.fn().cold_starts, 0);
  EXPECT_EQ(run.fn().vertical_scalings, 1);
  EXPECT_NEAR(run.fn().p99_ms, 200, 1e-6);
}

TEST(EngineHybridTest, NextWakeupIsHonouredBetweenSamples) {
  HybridRun run(OneFunction(SmQuota{0.5, 0.5, 0.5}, Trace("wakeup", {0})),
                {{At(2.5), {SetQuota(0, SmQuota{0.5, 0.5, 0.75})}}});
  const std::string log = run.log.text();
  EXPECT_TRUE(HasLine(log, "2.500000 f0 quota inst=0 request=0.500 limit=0.500 q=0.750")) << log;
  bool decided_at_wakeup = false;
  for (const auto& call : run.scaler->calls)
    decided_at_wakeup = decided_at_wakeup || call.now == At(2.5);
  EXPECT_TRUE(decided_at_wakeup);
}

}  // namespace
}  // namespace sluice::sim
