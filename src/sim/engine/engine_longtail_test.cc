// Issue 13 in the engine, worked by hand on the fake model (batch-1 latency 100 ms at a whole
// GPU, 1 GiB of parameters, 2 GiB of GPU memory, storage 1 GiB/s, PCIe 16 GiB/s): parking and
// un-parking an idle instance (its share, the un-park delay on the next request, the counts),
// parked placement, the idle-memory integral, the cold-start wait, and the fast start path
// (pre-started pool + wake from zero + host cache).
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "core/longtail/parking.h"
#include "sim/engine/engine_test_util.h"

namespace sluice::sim {
namespace {

using core::SmQuota;
using testing::FakeFunction;
using testing::FakePolicyOptions;
using testing::HasLine;
using testing::RunFake;
using testing::SmallConfig;
using testing::Trace;

const absl::Time kT0 = absl::UnixEpoch();

// One warm instance all along; requests at 0 and 4.5 s (trace times count from the first).
SimConfig TwoRequests() {
  SimConfig c = SmallConfig(1, 1);
  c.functions = {FakeFunction("f0", SmQuota{1, 1}, Trace("two", {0, 4.5}))};
  return c;
}

TEST(EngineLongTailTest, IdleInstanceParksAndWakesWithinTheUnparkDelay) {
  auto perf = testing::MakeFakePerf();
  FakePolicyOptions o;
  o.active_scripts = {{{kT0 + absl::Seconds(2), 0}}};
  o.start.unpark = absl::Milliseconds(5);
  auto out = RunFake(TwoRequests(), o, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(HasLine(out->log, "2.000000 f0 park inst=0")) << out->log;
  EXPECT_TRUE(HasLine(out->log, "4.500000 f0 unpark inst=0")) << out->log;
  EXPECT_TRUE(HasLine(out->log, "4.505000 f0 batch_start inst=0 size=1")) << out->log;
  EXPECT_TRUE(HasLine(out->log, "5.000000 f0 park inst=0")) << out->log;
  const FunctionResult& f = out->result.functions[0];
  EXPECT_NEAR(f.p50_ms, 100, 1e-6);
  EXPECT_NEAR(f.p99_ms, 105, 1e-6);  // the parked one waited one token period
  EXPECT_EQ(f.unparks, 1);
  EXPECT_EQ(f.parks, 2);  // parked again at the 5 s sample
  EXPECT_NEAR(f.cold_start_wait_s, 0.005, 1e-9);
  // Held share: 1 over [0, 2) and [4.5, 5), the parked share otherwise.
  EXPECT_NEAR(f.held_gpu_seconds, 2.5 + 7.5 * core::kParkedShare, 1e-9);
  // The GPU stays active: the parked instance keeps its memory.
  EXPECT_NEAR(out->result.mean_active_gpus, 1, 1e-12);
}

TEST(EngineLongTailTest, IdleMemoryCountsEveryInstantWithNothingDispatched) {
  auto perf = testing::MakeFakePerf();
  auto out = RunFake(TwoRequests(), FakePolicyOptions{}, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const FunctionResult& f = out->result.functions[0];
  EXPECT_NEAR(f.idle_memory_gib_s, 2 * (10 - 0.2), 1e-6);  // 2 GiB, busy 2 x 100 ms
  EXPECT_NEAR(out->result.idle_memory_gib_s, f.idle_memory_gib_s, 1e-12);
  EXPECT_EQ(f.cold_start_wait_s, 0);
  EXPECT_EQ(f.parks, 0);
}

// No instance at first; one request at 0.
SimConfig FromZero() {
  SimConfig c = SmallConfig(1, 1);
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("zero", {0}));
  f.initial_instances = 0;
  f.min_instances = 0;
  c.functions = {f};
  return c;
}

TEST(EngineLongTailTest, ScaleFromZeroWaitsForTheSampleAndTheContainer) {
  auto perf = testing::MakeFakePerf();
  FakePolicyOptions o;
  o.scripts = {{{kT0 + absl::Seconds(1), 1}}};
  auto out = RunFake(FromZero(), o, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const FunctionResult& f = out->result.functions[0];
  // Held 1 s until the 1 s sample, then 2 s container + 1 s storage load.
  EXPECT_NEAR(f.cold_start_wait_s, 4, 1e-9);
  EXPECT_NEAR(f.cold_start_ms_per_request, 4000, 1e-6);
  EXPECT_NEAR(f.p50_ms, 4100, 1e-6);
  EXPECT_NEAR(out->result.cold_start_ms_per_request, 4000, 1e-6);
}

TEST(EngineLongTailTest, PrestartedPoolAndWakeFromZeroStartAtTheFirstRequest) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = FromZero();
  c.cold_start.pool_handoff = absl::Milliseconds(10);
  FakePolicyOptions o;
  o.scripts = {{{kT0 + absl::Seconds(1), 1}}};
  o.start.prestarted_pool = true;
  o.start.wake_from_zero = true;
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(HasLine(out->log, "0.000000 f0 wake_from_zero")) << out->log;
  const FunctionResult& f = out->result.functions[0];
  // 10 ms hand-off + 1 s from storage (the host cache is empty).
  EXPECT_NEAR(f.cold_start_wait_s, 1.010, 1e-9);
  EXPECT_EQ(f.cold_starts, 1);
}

TEST(EngineLongTailTest, HostCacheColdStartLoadsOverPcie) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig(1, 1);
  FunctionConfig f = FakeFunction("f0", SmQuota{1, 1}, Trace("again", {0, 5}));
  f.initial_instances = 0;
  f.min_instances = 0;
  c.functions = {f};
  c.cold_start.pool_handoff = absl::Milliseconds(10);
  FakePolicyOptions o;
  // Retired at 3 s (parameters stay in the host cache), woken by the request at 5 s.
  o.scripts = {{{kT0 + absl::Seconds(1), 1}, {kT0 + absl::Seconds(3), 0},
                {kT0 + absl::Seconds(5), 1}}};
  o.start.prestarted_pool = true;
  o.start.wake_from_zero = true;
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->log.find("source=host_cache") != std::string::npos) << out->log;
  // Second wait: 10 ms + 1 GiB at 16 GiB/s = 72.5 ms.
  EXPECT_NEAR(out->result.functions[0].cold_start_wait_s, 1.010 + 0.0725, 1e-9);
}

TEST(EngineLongTailTest, InstancesBeyondActiveWantedArePlacedParked) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = FromZero();
  std::vector<core::InstanceDemand> demands;
  FakePolicyOptions o;
  o.scripts = {{{kT0 + absl::Seconds(1), 1}}};
  o.active_scripts = {{{kT0, 0}, {kT0 + absl::Seconds(2), 1}}};
  o.demands_out = &demands;
  auto out = RunFake(c, o, *perf);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(demands.size(), 1u);
  EXPECT_EQ(demands[0].quota, core::ParkedQuota());
  // ActiveWanted rises at the 2 s sample: the parked instance (still loading) is un-parked.
  EXPECT_TRUE(HasLine(out->log, "2.000000 f0 unpark inst=0")) << out->log;
}

// Three instances on one GPU under a 5 ms controller, all busy at 0; f0's parks at the 1 s
// sample, then f1 and f2 run again at 2 s. The split of every controller period is recorded.
absl::StatusOr<testing::FixedTokenController::Split> ParkedBesideBusy(int functions) {
  auto perf = testing::MakeFakePerf();
  SimConfig c = SmallConfig(1, 1);
  c.functions = {FakeFunction("f0", SmQuota{0.3, 1}, Trace("p", {0})),
                 FakeFunction("f1", SmQuota{0.3, 1}, Trace("a", {0, 2})),
                 FakeFunction("f2", SmQuota{0.3, 1}, Trace("b", {0, 2}))};
  c.functions.resize(functions);
  testing::FixedTokenController::Split split;
  FakePolicyOptions o;
  o.controller_period = absl::Milliseconds(5);
  o.active_scripts = {{{kT0 + absl::Seconds(1), 0}}};
  o.issue_split = &split;
  auto out = RunFake(c, o, *perf);
  if (!out.ok())
    return out.status();
  EXPECT_TRUE(HasLine(out->log, "1.000000 f0 park inst=0")) << out->log;
  return split;
}

// As in the node's token server (SetParked): a parked resident has no say in the split.
TEST(EngineLongTailTest, ParkedInstancesTakeNoPartInTheVerticalSplit) {
  auto split = ParkedBesideBusy(3);
  ASSERT_TRUE(split.ok()) << split.status();
  int before = 0, after = 0;
  for (const auto& [at, ids] : *split) {
    const bool parked = at >= kT0 + absl::Seconds(1);
    const std::vector<int64_t> want =
        parked ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{0, 1, 2};
    EXPECT_EQ(ids, want) << absl::FormatTime(at);
    ++(parked ? after : before);
  }
  EXPECT_GT(before, 0);
  EXPECT_GT(after, 0);  // f1 and f2 at 2 s
}

// One unparked worker beside a parked one has nobody to share with: its GPU is not ticked.
TEST(EngineLongTailTest, AWorkerBesideParkedOnesIsNotTicked) {
  auto split = ParkedBesideBusy(2);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_FALSE(split->empty());  // f0 and f1 at 0
  EXPECT_LT(split->back().first, kT0 + absl::Seconds(1));
}

}  // namespace
}  // namespace sluice::sim
