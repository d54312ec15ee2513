// LlmEngine: exact tiny scenarios with the fake perf model (TTFT, rejection, P/D transfer time,
// SSD / host-cache / multicast loads, a chain of 3, live scale-out), determinism, and properties
// (every request completes or is rejected; GPU-seconds = integral of held GPUs).
#include "sim/llm/engine.h"

#include <random>

#include "common/status.h"
#include "gtest/gtest.h"
#include "sim/llm/testing/fake_llm.h"

namespace sluice::sim::llm {
namespace {

using core::llm::LlmScaleDecision;
using testing::FakeLlmPerfModel;
using testing::ScriptedScaler;
using testing::ScriptedSource;

const absl::Time kT0 = absl::UnixEpoch();

// Gbps such that the link moves `gb_per_s` x 1e9 bytes per second.
double Gbps(double gb_per_s) { return gb_per_s * 8; }

core::net::ClusterNetSpec SmallCluster(int nodes, int gpus_per_node) {
  core::net::ClusterNetSpec c;
  c.name = "test";
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.nvlink_gbps = 0;
  c.pcie_gpu_gpu_gbps = Gbps(1);  // 1 GB/s
  c.rdma_gbps = Gbps(1);          // 1 GB/s per NIC and direction
  c.gpus_per_nic = 1;
  c.host_gpu_gbps = Gbps(2);      // 2 GB/s
  c.ssd_gbps_per_gpu = Gbps(0.5);  // 0.5 GB/s
  return c;
}

struct Scenario {
  LlmSimConfig config;
  LlmPolicyConfig policy;
  std::vector<Arrival> arrivals;  // function 0
  std::vector<std::pair<absl::Time, LlmScaleDecision>> script;
  int64_t kv_tokens = 1000;
  int layers = 4;
  bool scripted_arrivals = true;
  std::function<absl::StatusOr<core::llm::ZigzagPlan>(const core::llm::ZigzagInput&)> plan_live;
  mutable std::vector<core::llm::LlmLoad> observed;  // what the scaler saw
};

Scenario Basic(bool disaggregated, int nodes = 1, int gpus = 2) {
  Scenario s;
  s.config.name = "t";
  s.config.cluster = SmallCluster(nodes, gpus);
  s.config.duration = absl::Seconds(20);
  s.config.drain_timeout = absl::Seconds(30);
  LlmFunctionConfig f;
  f.name = "f";
  f.model = "fake";
  f.disaggregated = disaggregated;
  f.initial_prefill = 1;
  f.initial_decode = 1;
  s.config.functions.push_back(f);
  s.policy.set.name = "test";
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kNone;
  return s;
}

absl::StatusOr<LlmRunResult> RunScenario(const Scenario& s) {
  FakeLlmPerfModel model(s.kv_tokens, s.layers);
  EngineDeps deps;
  deps.models = {&model};
  if (s.scripted_arrivals) {
    deps.make_source = [&s](int) { return std::make_unique<ScriptedSource>(s.arrivals); };
  }
  std::vector<ScriptedScaler*> scalers;
  deps.make_scaler = [&s, &scalers](int, const core::llm::LlmScalerConfig&) {
    auto scaler = std::make_unique<ScriptedScaler>(s.script);
    scalers.push_back(scaler.get());
    return scaler;
  };
  deps.plan_live = s.plan_live;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<LlmEngine> e, LlmEngine::Create(s.config, s.policy,
                                                                          std::move(deps)));
  absl::StatusOr<LlmRunResult> r = e->Run();
  for (const ScriptedScaler* sc : scalers) s.observed = sc->loads;
  return r;
}

TEST(LlmEngineTest, OneRequestColocated) {
  Scenario s = Basic(false);
  s.arrivals = {{kT0 + absl::Seconds(1), 100, 3}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  const LlmFunctionResult& f = r->functions[0];
  EXPECT_EQ(f.completed, 1);
  EXPECT_NEAR(f.ttft_p50_ms, 11.0, 1e-3);
  EXPECT_NEAR(f.tbt_p50_ms, 5.1, 1e-3);
  EXPECT_EQ(f.slo_attainment, 1.0);
  EXPECT_EQ(r->gpu_seconds, 20.0);  // one GPU for the 20 s horizon
}

TEST(LlmEngineTest, OverLongPromptIsRejectedAndCounted) {
  Scenario s = Basic(false);
  s.arrivals = {{kT0 + absl::Seconds(1), 990, 20}, {kT0 + absl::Seconds(2), 100, 2}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->functions[0].requests, 2);
  EXPECT_EQ(r->functions[0].rejected, 1);
  EXPECT_EQ(r->functions[0].completed, 1);
}

TEST(LlmEngineTest, PdTransferTimeIsBytesOverBandwidth) {
  Scenario s = Basic(true);
  // 100 prompt tokens x 1 MB = 100 MB over 1 GB/s intra-node PCIe: 100 ms.
  s.arrivals = {{kT0 + absl::Seconds(1), 100, 2}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  const LlmFunctionResult& f = r->functions[0];
  EXPECT_EQ(f.completed, 1);
  EXPECT_NEAR(f.ttft_p50_ms, 11.0, 1e-3);
  EXPECT_NEAR(f.tbt_p50_ms, 100.0 + 5.1, 1e-3);
  EXPECT_EQ(r->gpu_seconds, 40.0);
}

// Scale out one prefill instance at the first sample (t = 0.1 s) on an otherwise idle cluster
// of 4 GB models (4 layers of 1 GB): its mean load time by source.
double LoadSeconds(core::llm::LoadSource source, core::blitz::HostCachePolicy cache) {
  Scenario s = Basic(true, 2, 2);
  s.policy.set.source = source;
  s.policy.set.host_cache = cache;
  s.script = {{kT0, LlmScaleDecision{1, 0, 0}}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return -1;
  EXPECT_EQ(r->functions[0].scale_outs, 1);
  return r->functions[0].mean_load_s;
}

TEST(LlmEngineTest, LoadTimesBySource) {
  using core::blitz::HostCachePolicy;
  using core::llm::LoadSource;
  // SSD 0.5 GB/s: 8 s; host cache over 2 GB/s PCIe: 2 s; RDMA multicast at 1 GB/s: 4 s.
  EXPECT_NEAR(LoadSeconds(LoadSource::kSsdAndHostCache, HostCachePolicy::kNone), 8.0, 1e-6);
  EXPECT_NEAR(LoadSeconds(LoadSource::kSsdAndHostCache, HostCachePolicy::kAllCache), 2.0, 1e-6);
  EXPECT_NEAR(LoadSeconds(LoadSource::kNetworkMulticast, HostCachePolicy::kOneCopy), 4.0, 1e-6);
}

TEST(LlmEngineTest, ChainOfThreeTakesOneTransferPlusTwoLayers) {
  Scenario s = Basic(true, 5, 1);
  s.policy.set.source = core::llm::LoadSource::kNetworkMulticast;
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kOneCopy;
  s.policy.set.plan.multi_chain = false;
  s.script = {{kT0, LlmScaleDecision{3, 0, 0}}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  // Hops finish after 4, 5 and 6 layer times (1 s each): the last one at one transfer (4 s) +
  // 2 layers, the mean at 5 s.
  EXPECT_EQ(r->functions[0].scale_outs, 3);
  EXPECT_NEAR(r->functions[0].mean_load_s, 5.0, 1e-6);
}

// Concurrent scale-out rounds. Round 1 (two prefill instances, loading from 0.3 s) draws from
// the decode instance and the host copy, one chain each (the prefill instance is pruned: it
// sends KV). Round 2 (two more, from 1.3 s) starts while round 1 loads. Merged, its members
// chain after round 1's loading members, whose NICs send nothing yet: every load takes the
// uncontended 4 s. Planned on its own, round 2 shares the two source NICs with round 1 and
// every load slows.
double TwoRoundsMeanLoad(bool merge) {
  Scenario s = Basic(true, 6, 1);
  s.policy.set.source = core::llm::LoadSource::kNetworkMulticast;
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kOneCopy;
  s.config.merge_scale_rounds = merge;
  s.script = {{kT0, LlmScaleDecision{2, 0, 0}},
              {kT0 + absl::Milliseconds(1100), LlmScaleDecision{2, 0, 0}}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return -1;
  EXPECT_EQ(r->functions[0].scale_outs, 4);
  EXPECT_EQ(r->timeline.back().prefill_instances, 5);
  return r->functions[0].mean_load_s;
}

TEST(LlmEngineTest, ALaterRoundChainsAfterTheLoadingMembersOfTheFirst) {
  EXPECT_NEAR(TwoRoundsMeanLoad(true), 4.0, 1e-6);
  EXPECT_GT(TwoRoundsMeanLoad(false), 4.5);
}

// Two functions of one model share its pool entry: each scales out one colocated instance,
// loaded over the network from the model's copies (either function's instance or the host),
// one chain per source at the uncontended 4 s; both serve all their requests.
TEST(LlmEngineTest, FunctionsOfOneModelShareItsParameterCopies) {
  Scenario s = Basic(false, 5, 1);
  LlmFunctionConfig g = s.config.functions[0];
  g.name = "g";
  s.config.functions.push_back(g);
  s.policy.set.source = core::llm::LoadSource::kNetworkMulticast;
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kOneCopy;
  s.script = {{kT0, LlmScaleDecision{1, 1, 0}}};
  for (int i = 0; i < 20; ++i) s.arrivals.push_back({kT0 + absl::Milliseconds(300 * i), 100, 4});
  FakeLlmPerfModel model(s.kv_tokens, s.layers);
  EngineDeps deps;
  deps.models = {&model, &model};
  deps.make_source = [&s](int) { return std::make_unique<ScriptedSource>(s.arrivals); };
  deps.make_scaler = [&s](int, const core::llm::LlmScalerConfig&) {
    return std::make_unique<ScriptedScaler>(s.script);
  };
  absl::StatusOr<std::unique_ptr<LlmEngine>> e = LlmEngine::Create(s.config, s.policy,
                                                                   std::move(deps));
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<LlmRunResult> r = (*e)->Run();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->functions.size(), 2u);
  for (const LlmFunctionResult& f : r->functions) {
    EXPECT_EQ(f.scale_outs, 1) << f.name;
    EXPECT_NEAR(f.mean_load_s, 4.0, 1e-6) << f.name;
    EXPECT_EQ(f.completed, 20) << f.name;
  }
  EXPECT_EQ(r->timeline.back().prefill_instances, 4);
}

// Failures (LlmSimConfig::failures). The chain of three above; its middle member dies at 2 s
// while it receives layer 0 from the first (which has layer 0 since 1.3 s and gets layer 1 at
// 2.3 s). The chain closes around it: the third member now receives from the first, 1 s per
// layer as the first delivers them: layers at 3, 4, 5, 6 s. Loads: 4.0 s and 5.7 s.
TEST(LlmEngineFailureTest, ChainMemberDiesMidTransferAndTheScaleOutStillCompletes) {
  Scenario s = Basic(true, 5, 1);
  s.policy.set.source = core::llm::LoadSource::kNetworkMulticast;
  s.policy.set.host_cache = core::blitz::HostCachePolicy::kOneCopy;
  s.policy.set.plan.multi_chain = false;
  s.script = {{kT0, LlmScaleDecision{3, 0, 0}}};
  s.config.failures = {{absl::Seconds(2), 3, 0}};  // node 3 holds the chain's second member
  for (int i = 0; i < 60; ++i) s.arrivals.push_back({kT0 + absl::Milliseconds(100 * i), 100, 4});
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
double BurstTtftP99(bool live) {
  Scenario s = Basic(true, 2, 2);
  s.kv_tokens = 1000000;
  s.config.functions[0].max_batch_tokens = 1000;
  // One output token: no KV transfer, so TTFT measures prefill capacity alone.
  for (int i = 0; i < 400; ++i) s.arrivals.push_back({kT0 + absl::Milliseconds(200), 1000, 1});
  s.script = {{kT0, LlmScaleDecision{1, 0, 0}}};
  if (live) {
    s.policy.set.live = core::llm::LiveMode::kBestEffort;
    s.plan_live = [](const core::llm::ZigzagInput& in) -> absl::StatusOr<core::llm::ZigzagPlan> {
      core::llm::ZigzagPlan p;
      p.target_layers.assign(in.weight.size(), std::min(in.layers_loaded, in.num_layers / 2));
      return p;
    };
  }
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return -1;
  EXPECT_EQ(r->functions[0].completed, 400);
  EXPECT_EQ(r->functions[0].live_scales, live ? 1 : 0);
  return r->functions[0].ttft_p99_ms;
}

TEST(LlmEngineTest, LiveScaleOutServesBeforeLoadingEnds) {
  const double stop_the_world = BurstTtftP99(false);
  const double live = BurstTtftP99(true);
  EXPECT_LT(live, stop_the_world);
}

// The autoscaler reads kv_usage x decode_instances as KV demand in instances' worth, and
// decode_instances counts loading ones: a loading instance must dilute the mean, not be skipped.
TEST(LlmEngineTest, KvUsageIsAveragedOverServingAndLoadingInstances) {
  Scenario s = Basic(true, 2, 2);
  s.arrivals = {{kT0 + absl::Milliseconds(10), 500, 400}};
  s.script = {{kT0 + absl::Seconds(1), LlmScaleDecision{0, 1, 0}}};
  absl::StatusOr<LlmRunResult> r = RunScenario(s);
  ASSERT_TRUE(r.ok()) << r.status();
  bool saw_one = false, saw_two = false;
  for (const core::llm::LlmLoad& l : s.observed) {
    if (l.now > kT0 + absl::Seconds(2)) break;  // the request decodes for ~2 s
    if (l.now < kT0 + absl::Milliseconds(200)) continue;
    if (l.decode_instances == 1) {
      saw_one = true;
      EXPECT_GE(l.kv_usage, 0.5);
    } else if (l.decode_instances == 2) {
      saw_two = true;
      EXPECT_LE(l.kv_usage, 0.5);  // the one decode instance's KV over two instances
    }
  }
  EXPECT_TRUE(saw_one && saw_two);
}

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
    for (const LlmTimelinePoint& p : r->timeline) integral += p.gpus_busy * 0.1;
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
