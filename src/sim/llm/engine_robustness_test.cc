// LlmEngine robustness: chain members and sources dying mid-transfer, requests on dead
// instances re-queued, determinism, and properties over Poisson load (every request completes or
// is rejected; GPU-seconds = integral of held GPUs; random failures lose nothing).
#include <random>

#include "gtest/gtest.h"

#include "sim/llm/engine.h"
#include "sim/llm/testing/engine_scenario.h"

namespace sluice::sim::llm {
namespace {

using core::llm::LlmScaleDecision;
using testing::Basic;
using testing::Gbps;
using testing::kT0;
using testing::RunScenario;
using testing::Scenario;

TEST(LlmEngineFailureTest, ChainMemberDiesMidTransferAndTheScaleOutStillCompletes) {
  Scenario s = Basic(true, 5, 1);
  s.policy.set.source = core::llm::LoadSource::kNetworkMulticast;
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kOneCopy;
  s.policy.set.plan.multi_chain = false;
  s.script = {{kT0, LlmScaleDecision{3, 0, 0}}};
  s.config.failures = {{absl::Seconds(2), 3, 0}};  // node 3 holds the chain's second member
  for (int i = 0; i < 60; ++i)
    s.arrivals.push_back({kT0 + absl::Milliseconds(100 * i), 100, 4});
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  const LlmFunctionResult& f = r->functions[0];
  EXPECT_EQ(f.scale_outs, 3);
  EXPECT_EQ(f.instance_failures, 1);
  EXPECT_EQ(f.requeued, 0);  // it served nothing yet
  EXPECT_NEAR(f.mean_load_s, (4.0 + 5.7) / 2, 1e-6);
  EXPECT_EQ(f.completed, f.requests);
  EXPECT_EQ(r->timeline.back().prefill_instances, 3);  // the initial one and two loaded
}

// Serving instances die with work in flight: a prefill instance (prompts queued and prefilling,
// KV leaving for decode) and then the only decode instance (sequences decoding, KV arriving).
// Their sequences are re-queued and recomputed; a decode instance scaled out later finishes them.
TEST(LlmEngineFailureTest, RequestsOnDeadInstancesAreRequeuedAndNoneIsLost) {
  Scenario s = Basic(true, 4, 1);
  s.config.functions[0].initial_prefill = 2;  // nodes 0 and 1; decode on node 2
  s.config.failures = {{absl::Milliseconds(1050), 1, 0}, {absl::Milliseconds(1500), 2, -1}};
  s.script = {{kT0 + absl::Milliseconds(1600), LlmScaleDecision{0, 1, 0}}};
  for (int i = 0; i < 100; ++i) {
    s.arrivals.push_back({kT0 + absl::Seconds(1) + absl::Milliseconds(10 * i), 100, 20});
  }
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  const LlmFunctionResult& f = r->functions[0];
  EXPECT_EQ(f.instance_failures, 2);
  EXPECT_GT(f.requeued, 0);
  EXPECT_EQ(f.requests, 100);
  EXPECT_EQ(f.completed, 100);
  EXPECT_EQ(f.scale_outs, 1);
  // 3 GPUs until 1.05 s, then 2, then 1 from 1.5 s, 2 from the scale-out at 1.6 s.
  EXPECT_NEAR(r->gpu_seconds, 3 * 1.05 + 2 * 0.45 + 1 * 0.1 + 2 * 18.4, 1e-6);
}

// The source of a load dies: the decode instance on node 1 feeds the new prefill instance on
// node 2 (layers at 1.3 s, in flight to 2.3 s); node 1 dies at 2 s. The hop continues from the
// host copy on node 0 (1 GB/s), restarting layer 1: layers at 3, 4, 5 s (load 4.7 s).
TEST(LlmEngineFailureTest, LoadContinuesFromTheRemainingSourceWhenItsSourceDies) {
  Scenario s = Basic(true, 3, 1);
  s.policy.set.source = core::llm::LoadSource::kNetworkMulticast;
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kOneCopy;
  s.script = {{kT0, LlmScaleDecision{1, 0, 0}}};
  s.config.failures = {{absl::Seconds(2), 1, -1}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->functions[0].instance_failures, 1);
  EXPECT_NEAR(r->functions[0].mean_load_s, 4.7, 1e-6);
  EXPECT_EQ(r->timeline.back().prefill_instances, 2);
}

// A burst on one prefill instance; a second prefill instance loads from SSD (8 s). Live scaling
// (best-effort split) finishes the backlog earlier than stop-the-world.

Scenario Poisson(uint64_t seed) {
  Scenario s = Basic(true, 2, 4);
  s.scripted_arrivals = false;
  s.config.seed = seed;
  s.config.duration = absl::Seconds(10);
  s.config.cluster.pcie_gpu_gpu_gbps = Gbps(100);  // KV transfers keep up with the load
  s.config.functions[0].workload.kind = WorkloadKind::kPoisson;
  s.config.functions[0].workload.rate_rps = 20;
  s.config.functions[0].default_prompt_tokens = 300;
  s.config.functions[0].default_output_tokens = 20;
  s.script = {{kT0 + absl::Seconds(1), LlmScaleDecision{1, 1, 0}},
              {kT0 + absl::Seconds(6), LlmScaleDecision{-1, -1, 0}}};
  return s;
}

TEST(LlmEngineTest, SameSeedSameResult) {
  absl::StatusOr<LlmRunResult> a = RunScenario(Poisson(7));
  absl::StatusOr<LlmRunResult> b = RunScenario(Poisson(7));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->events, b->events);
  EXPECT_EQ(a->functions[0].completed, b->functions[0].completed);
  EXPECT_EQ(a->functions[0].ttft_p99_ms, b->functions[0].ttft_p99_ms);
  EXPECT_EQ(a->functions[0].tbt_p99_ms, b->functions[0].tbt_p99_ms);
  EXPECT_EQ(a->gpu_seconds, b->gpu_seconds);
}

TEST(LlmEnginePropertyTest, EveryRequestCompletesOrIsRejectedAndGpuSecondsIntegrate) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Scenario s = Poisson(seed);
    s.scripted_arrivals = true;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::uniform_int_distribution<int> prompt(1, 1200), output(1, 80), gap_ms(1, 200);
    absl::Time t = kT0;
    for (int i = 0; i < 150; ++i) {
      t += absl::Milliseconds(gap_ms(rng));
      s.arrivals.push_back({t, prompt(rng), output(rng)});
    }
    absl::StatusOr<LlmRunResult> r = RunScenario(s);
    ASSERT_TRUE(r.ok()) << r.status();
    const LlmFunctionResult& f = r->functions[0];
    EXPECT_EQ(f.completed + f.rejected, f.requests) << "seed " << seed;
    // 2 GPUs for 10 s, +2 from 1 s (one P, one D), -2 released once drained after 6 s: the
    // integral lies between the drain starting at 6 s and the horizon.
    EXPECT_GE(r->gpu_seconds, 20.0 + 2 * 5.0 - 1e-9) << "seed " << seed;
    EXPECT_LE(r->gpu_seconds, 20.0 + 2 * 9.0 + 1e-9) << "seed " << seed;
    double integral = 0;
    for (const LlmTimelinePoint& p : r->timeline)
      integral += p.gpus_busy * 0.1;
    EXPECT_NEAR(r->gpu_seconds, integral, 4 * 0.1 + 1e-6) << "seed " << seed;
  }
}

// Random GPU failures during a Poisson run with scale-out and scale-in: every request still
// completes (or is rejected), whatever was on the dead instances.
TEST(LlmEnginePropertyTest, RandomFailuresLoseNoRequest) {
  int64_t failures = 0, requeued = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Scenario s = Poisson(seed);
    // A prefill instance that dies early leaves a backlog whose KV crosses the 1 GB/s NICs.
    s.config.drain_timeout = absl::Seconds(120);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::uniform_int_distribution<int> node(0, 1), gpu(0, 3), ms(500, 5500);
    for (int k = 0; k < 2; ++k) {
      s.config.failures.push_back({absl::Milliseconds(ms(rng)), node(rng), gpu(rng)});
    }
    absl::StatusOr<LlmRunResult> r = RunScenario(s);
    ASSERT_TRUE(r.ok()) << r.status();
    const LlmFunctionResult& f = r->functions[0];
    EXPECT_EQ(f.completed + f.rejected, f.requests) << "seed " << seed;
    failures += f.instance_failures;
    requeued += f.requeued;
  }
  EXPECT_GT(failures, 6);  // most failures hit an instance
  EXPECT_GT(requeued, 0);
}

}  // namespace
}  // namespace sluice::sim::llm
