// Batched fluid windows (FluidConfig::batch_samples) against unbatched fluid runs of the same
// fleet: skipping windows that certainly see no arrival changes nothing at all (the whole result
// is bit-identical), and under the `sluice` policy, whose scaler promises samples without a
// decision, batches leave every decision (instances, cold starts, parks) as it was; only the
// queue model's inputs (share taken once per batch) move latencies a little.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "core/registry/policy_registry.h"
#include "sim/engine/engine_test_util.h"

namespace sluice::sim {
namespace {

using core::SmQuota;
using testing::FakeFunction;
using testing::FakePolicyOptions;
using testing::Poisson;

// Functions from well below to well above generate_below_rps (2), able to scale to zero, for
// 20 minutes on 2 x 4 GPUs.
SimConfig Fleet(int batch_samples) {
  SimConfig c = testing::SmallConfig(2, 4);
  c.horizon = absl::Minutes(20);
  int i = 0;
  for (double rps : {0.3, 0.8, 1.5, 3.0, 6.0, 12.0}) {
    FunctionConfig f = FakeFunction("f" + std::to_string(i++), SmQuota{0.5, 0.5}, Poisson(rps));
    f.max_batch = 4;
    f.max_queue_delay = absl::Milliseconds(5);
    f.initial_instances = 0;
    f.min_instances = 0;
    c.functions.push_back(f);
  }
  c.fluid.enabled = true;
  c.fluid.min_mean_rps = 0.2;
  c.fluid.batch_samples = batch_samples;
  return c;
}

struct Batched {
  RunResult result;
  int64_t batched = 0;
  int64_t skipped = 0;
  int64_t quiet = 0;
};

Batched RunCounted(const SimConfig& c, std::unique_ptr<core::PolicySet> policy,
                   const core::PerfModel& perf) {
  auto e = Engine::Create(c, std::move(policy), "test", WorkloadVariant{}, perf, "t.yaml", nullptr);
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok())
    return {};
  auto r = (*e)->Run();
  EXPECT_TRUE(r.ok()) << r.status();
  return {r.ok() ? *r : RunResult{}, (*e)->fluid_batched_windows(), (*e)->fluid_skipped_windows(),
          (*e)->quiet_batched_samples()};
}

// Equal results, every field; on a difference, the first differing line of each (a whole dump
// has a line per sample).
void ExpectSameResult(const RunResult& a, const RunResult& b) {
  const std::vector<std::string> la = absl::StrSplit(testing::Dump(a), '\n');
  const std::vector<std::string> lb = absl::StrSplit(testing::Dump(b), '\n');
  int shown = 0;
  for (size_t i = 0; i < std::min(la.size(), lb.size()) && shown < 3; ++i) {
    EXPECT_EQ(la[i], lb[i]) << "line " << i;
    shown += la[i] != lb[i] ? 1 : 0;
  }
  EXPECT_EQ(la.size(), lb.size());
}

Batched RunSluice(int batch_samples, const core::PerfModel& perf) {
  auto policy = core::MakePolicySet("sluice", {}, "t.yaml");
  EXPECT_TRUE(policy.ok()) << policy.status();
  return RunCounted(Fleet(batch_samples), std::move(*policy), perf);
}

TEST(FluidBatchTest, SkippingCertainlyEmptyWindowsChangesNothing) {
  // The fake policy's scalers promise nothing, so no window is batched; only empty windows of
  // the generated functions (below 2 rps) are skipped.
  auto perf = testing::MakeFakePerf(absl::Milliseconds(60), absl::Milliseconds(15));
  FakePolicyOptions o;
  const Batched one = RunCounted(Fleet(1), std::make_unique<testing::FakePolicySet>(o), *perf);
  const Batched ten = RunCounted(Fleet(10), std::make_unique<testing::FakePolicySet>(o), *perf);
  EXPECT_EQ(one.skipped, 0);
  EXPECT_GT(ten.skipped, 1000);
  EXPECT_EQ(ten.batched, 0);
  ExpectSameResult(ten.result, one.result);
}

TEST(FluidBatchTest, BatchesUnderSluiceTakeTheSameDecisions) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(60), absl::Milliseconds(15));
  const Batched one = RunSluice(1, *perf);
  const Batched many = RunSluice(30, *perf);
  EXPECT_EQ(one.batched, 0);
  EXPECT_GT(many.batched, 2000);
  ASSERT_EQ(one.result.functions.size(), many.result.functions.size());
  for (size_t i = 0; i < one.result.functions.size(); ++i) {
    const FunctionResult& a = one.result.functions[i];
    const FunctionResult& b = many.result.functions[i];
    EXPECT_EQ(b.requests, a.requests) << a.name;
    EXPECT_EQ(b.cold_starts, a.cold_starts) << a.name;
    EXPECT_EQ(b.parks, a.parks) << a.name;
    EXPECT_EQ(b.unparks, a.unparks) << a.name;
    EXPECT_NEAR(b.held_gpu_seconds, a.held_gpu_seconds, 1e-6 * a.held_gpu_seconds) << a.name;
    EXPECT_NEAR(b.svr, a.svr, 0.01) << a.name;
    EXPECT_NEAR(b.mean_ms, a.mean_ms, 0.02 * a.mean_ms) << a.name;
    EXPECT_NEAR(b.idle_memory_gib_s, a.idle_memory_gib_s, 0.01 * a.idle_memory_gib_s) << a.name;
  }
  EXPECT_EQ(many.result.peak_active_gpus, one.result.peak_active_gpus);
  EXPECT_NEAR(many.result.mean_active_gpus, one.result.mean_active_gpus, 1e-9);
}

// FluidConfig::draw_thread: the fluid functions' counts and generated arrivals come from a
// helper thread, value for value what the sources give on the engine's thread.
TEST(FluidBatchTest, TheDrawThreadChangesNothing) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(60), absl::Milliseconds(15));
  auto run = [&](bool draw_thread) {
    SimConfig c = Fleet(30);
    c.fluid.draw_thread = draw_thread;
    return RunCounted(c, *core::MakePolicySet("sluice", {}, "t.yaml"), *perf);
  };
  const Batched inline_draws = run(false);
  const Batched thread_draws = run(true);
  EXPECT_GT(thread_draws.batched, 2000);
  ExpectSameResult(thread_draws.result, inline_draws.result);
}

// Rarely invoked functions (exact below min_mean_rps, one fluid burst) spend most samples quiet
// inside the lazy window after each arrival; quiet batches (on by default) hold those back
// without changing anything.
TEST(FluidBatchTest, QuietBatchesOfRareFunctionsChangeNothing) {
  auto perf = testing::MakeFakePerf(absl::Milliseconds(60), absl::Milliseconds(15));
  auto rare = [](int batch_samples) {
    SimConfig c = Fleet(1);
    c.quiet_batch_samples = batch_samples;
    c.horizon = absl::Minutes(30);
    const double rates[] = {0.01, 0.02, 0.05, 0.1, 0.15, 0.3};
    for (size_t i = 0; i < c.functions.size(); ++i)
      c.functions[i].workload = Poisson(rates[i]);
    // A minute of 40 rps, then silence: scaled out, then in over quiet samples.
    std::vector<double> burst;
    for (int k = 0; k < 2400; ++k)
      burst.push_back(30.0 + k * 0.025);
    c.functions[5].workload = testing::Trace("burst", burst);
    c.fluid.min_mean_rps = 1;  // none is fluid
    return c;
  };
  auto policy = [] {
    return *core::MakePolicySet("sluice", {}, "t.yaml");
  };
  const Batched one = RunCounted(rare(1), policy(), *perf);
  const Batched many = RunCounted(rare(30), policy(), *perf);
  EXPECT_EQ(one.quiet, 0);
  EXPECT_GT(many.quiet, 1000);
  ExpectSameResult(many.result, one.result);
}

}  // namespace
}  // namespace sluice::sim
