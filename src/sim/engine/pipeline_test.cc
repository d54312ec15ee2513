// Pipeline functions in the engine (issue 11): validation errors naming the field, activation
// transfers (bytes / bandwidth on an idle link, max-min shares under contention), end-to-end
// latency = the sum of its parts, pipeline results, and policies without a pipeline scaler (each
// stage scales on its own: dilu, has-gpu) running a pipeline unchanged.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "sim/engine/engine_test_util.h"
#include "sim/engine/testing/fake_pipeline.h"
#include "sim/workload/random.h"

namespace sluice::sim {
namespace {

using testing::PipelineOf;
using testing::StageFunction;

constexpr double kGBps = 1e9;  // 8 Gbps

// `nodes` nodes of one GPU each, 16 CPU cores; a network whose NICs move 1 GB/s.
SimConfig NetConfig(int nodes) {
  SimConfig c = testing::SmallConfig(nodes, 1);
  for (core::NodeSpec& n : c.cluster.nodes)
    n.cpu_cores = 16;
  core::net::ClusterNetSpec net;
  net.name = "test";
  net.nodes = nodes;
  net.gpus_per_node = 1;
  net.rdma_gbps = 8;
  c.network = net;
  return c;
}

// Stage i on model "m<i>" (base latency `ms[i]`), each an exclusive GPU (one per node, placed in
// order by first fit), stage 0 driven by `workload`.
SimConfig Chain(const std::vector<double>& ms, const std::vector<int64_t>& bytes,
                const WorkloadSpec& workload, core::PerfModel& perf) {
  SimConfig c = NetConfig(static_cast<int>(ms.size()));
  const int n = static_cast<int>(ms.size());
  for (int i = 0; i < n; ++i) {
    testing::AddLinearModel(perf, absl::StrCat("m", i), absl::Milliseconds(ms[i]));
    c.functions.push_back(
        StageFunction("p", i, n, absl::StrCat("m", i), core::Bytes(i + 1 < n ? bytes[i] : 0)));
  }
  c.functions[0].workload = workload;
  c.pipelines = {PipelineOf("p", c.functions, absl::Seconds(1))};
  return c;
}

absl::StatusOr<testing::Outcome> RunPipe(const SimConfig& c, const core::PerfModel& perf) {
  return testing::RunFake(c, testing::FakePolicyOptions{}, perf);
}

std::string ErrorOf(const SimConfig& c, const core::PerfModel& perf) {
  auto r = RunPipe(c, perf);
  return r.ok() ? "ok" : std::string(r.status().message());
}

TEST(PipelineValidationTest, ErrorsNameTheField) {
  core::PerfModel perf;
  const SimConfig good = Chain({100, 50}, {1000}, testing::Poisson(1), perf);
  ASSERT_EQ(ErrorOf(good, perf), "ok");
  SimConfig c = good;
  c.pipelines[0].stages[1] = "nope";
  EXPECT_NE(ErrorOf(c, perf).find("pipelines[0] (p).stages[1]"), std::string::npos)
      << ErrorOf(c, perf);
  c = good;
  c.functions[1].stage->index = 0;
  EXPECT_NE(ErrorOf(c, perf).find("stages[1]"), std::string::npos) << ErrorOf(c, perf);
  c = good;
  c.functions[0].stage->activation_out = core::Bytes(-1);
  EXPECT_NE(ErrorOf(c, perf).find("functions[0] (p/s0).stage.activation_out"), std::string::npos)
      << ErrorOf(c, perf);
  c = good;
  c.functions[1].workload = testing::Poisson(1);
  EXPECT_NE(ErrorOf(c, perf).find("functions[1] (p/s1).workload"), std::string::npos)
      << ErrorOf(c, perf);
  c = good;
  c.functions[1].stage->pipeline = "q";
  EXPECT_NE(ErrorOf(c, perf).find("stages[1]"), std::string::npos) << ErrorOf(c, perf);
  c = good;
  c.pipelines[0].slo = absl::ZeroDuration();
  EXPECT_NE(ErrorOf(c, perf).find("pipelines[0] (p).slo"), std::string::npos);
  c = good;
  c.network->nodes = 5;
  EXPECT_NE(ErrorOf(c, perf).find("network.nodes"), std::string::npos) << ErrorOf(c, perf);
  c = good;
  c.pipelines.clear();
  EXPECT_NE(ErrorOf(c, perf).find("functions[0] (p/s0).stage.pipeline"), std::string::npos)
      << ErrorOf(c, perf);
}

TEST(PipelineTransferTest, IdleLinkTakesBytesOverBandwidth) {
  core::PerfModel perf;
  // 100 ms + 100 MB at 1 GB/s + 50 ms.
  const SimConfig c = Chain({100, 50}, {100'000'000}, testing::Trace("one", {0.5}), perf);
  auto out = RunPipe(c, perf);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->result.pipelines.size(), 1u);
  const PipelineResult& p = out->result.pipelines[0];
  EXPECT_EQ(p.requests, 1);
  EXPECT_EQ(p.completed, 1);
  EXPECT_NEAR(p.mean_ms, 250, 1e-6);
  EXPECT_NEAR(p.stages[1].mean_transfer_ms, 100, 1e-6);
  EXPECT_NEAR(p.stages[0].mean_sojourn_ms, 100, 1e-6);
  EXPECT_NEAR(p.stages[1].mean_sojourn_ms, 50, 1e-6);
  EXPECT_DOUBLE_EQ(p.stages[0].mean_transfer_ms, 0);
  // The stage functions keep their rows: latency there is the time at the stage.
  EXPECT_NEAR(out->result.functions[1].mean_ms, 50, 1e-6);
  EXPECT_EQ(out->result.functions[1].requests, 1);
}

TEST(PipelineTransferTest, ConcurrentTransfersShareTheLinkMaxMin) {
  core::PerfModel perf;
  SimConfig c = Chain({100, 50}, {100'000'000}, testing::Trace("two", {0.5, 0.5}), perf);
  for (FunctionConfig& f : c.functions) {
    f.max_batch = 2;
    f.max_queue_delay = absl::Milliseconds(10);
  }
  auto out = RunPipe(c, perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const PipelineResult& p = out->result.pipelines[0];
  ASSERT_EQ(p.completed, 2);
  // Both leave stage 0 in one batch; the two flows share the 1 GB/s NIC: 200 ms each.
  EXPECT_NEAR(p.stages[1].mean_transfer_ms, 200, 1e-6);
  EXPECT_NEAR(p.p99_ms, 350, 1e-6);
  EXPECT_NEAR(p.p50_ms, 350, 1e-6);
}

TEST(PipelineTransferTest, SameGpuAndZeroBytesAreInstant) {
  core::PerfModel perf;
  SimConfig c = Chain({100, 50}, {0}, testing::Trace("zero", {0.5}), perf);
  auto out = RunPipe(c, perf);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NEAR(out->result.pipelines[0].mean_ms, 150, 1e-6);
}

// Property: on an idle system (requests far apart, every stage warm on its own GPU) the end-to-
// end latency is the sum of the stages' service times and of bytes / bandwidth; and on any run,
// mean end-to-end = sum of mean sojourns + sum of mean transfers (when nothing is dropped).
TEST(PipelinePropertyTest, EndToEndIsTheSumOfItsParts) {
  Rng rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    core::PerfModel perf;
    const int n = 2 + trial % 3;
    std::vector<double> ms;
    std::vector<int64_t> bytes;
    double expect = 0;
    for (int i = 0; i < n; ++i) {
      ms.push_back(5 + std::floor(rng.Uniform() * 100));
      bytes.push_back(static_cast<int64_t>(1'000'000 * (1 + std::floor(rng.Uniform() * 200))));
      expect += ms.back() + (i + 1 < n ? bytes.back() / kGBps * 1000 : 0);
    }
    const SimConfig idle =
        Chain(ms, bytes, testing::Trace(absl::StrCat("idle", trial), {0.5, 2.5, 4.5}), perf);
    auto out = RunPipe(idle, perf);
    ASSERT_TRUE(out.ok()) << out.status();
    const PipelineResult& p = out->result.pipelines[0];
    ASSERT_EQ(p.completed, 3) << trial;
    EXPECT_NEAR(p.mean_ms, expect, 1e-6) << trial;
    EXPECT_NEAR(p.p99_ms, expect, 1e-6) << trial;
    // Under load (queues, shared links) the decomposition still holds on the means.
    const SimConfig busy = Chain(ms, bytes, testing::Poisson(0.6 * 1000 / 110), perf);
    auto b = RunPipe(busy, perf);
    ASSERT_TRUE(b.ok()) << b.status();
    const PipelineResult& q = b->result.pipelines[0];
    double parts = 0;
    for (const StageResult& s : q.stages)
      parts += s.mean_sojourn_ms + s.mean_transfer_ms;
    if (q.dropped == 0) {
      EXPECT_NEAR(q.mean_ms, parts, 1e-6 * q.mean_ms) << trial;
    }
    EXPECT_GT(q.completed, 0);
  }
}

TEST(PipelineResultTest, GoodputSweepAndStageStats) {
  core::PerfModel perf;
  SimConfig c = Chain({100, 50}, {0}, testing::Trace("sweep", {0.5, 1.5, 2.5, 2.5}), perf);
  c.pipelines[0].slo = absl::Milliseconds(200);
  c.pipelines[0].slo_base = absl::Milliseconds(100);
  c.pipelines[0].slo_multipliers = {1, 2, 3};
  auto out = RunPipe(c, perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const PipelineResult& p = out->result.pipelines[0];
  // Three alone at 150 ms; of the two at 2.5 s one waits 100 ms more at stage 0: 250 ms.
  ASSERT_EQ(p.completed, 4);
  EXPECT_NEAR(p.svr, 0.25, 1e-9);
  EXPECT_NEAR(p.goodput_rps, 3.0 / 10, 1e-9);
  ASSERT_EQ(p.sweep_goodput_rps.size(), 3u);
  EXPECT_NEAR(p.sweep_slo_satisfaction[0], 0, 1e-9);
  EXPECT_NEAR(p.sweep_slo_satisfaction[1], 0.75, 1e-9);
  EXPECT_NEAR(p.sweep_slo_satisfaction[2], 1, 1e-9);
  EXPECT_NEAR(p.sweep_goodput_rps[2], 0.4, 1e-9);
  // Stage 0 busy 0.4 s of 10, one replica all along; the queue held one request for 100 ms.
  EXPECT_NEAR(p.stages[0].utilisation, 0.04, 1e-9);
  EXPECT_NEAR(p.stages[0].mean_replicas, 1, 1e-9);
  EXPECT_NEAR(p.stages[0].mean_queue_length, 0.1 / 10, 1e-9);
  EXPECT_GT(p.stages[0].arrival_cv, 0);
  EXPECT_FALSE(p.stages[0].key_stage_ever);
  EXPECT_GT(p.held_gpu_seconds, 0);
}

// Policies without a PipelineScaler (dilu, has-gpu, cocktail, infless) scale each stage as an
// ordinary function; quart and inferline drive the whole pipeline (smoke test: it runs and
// serves).
TEST(PipelinePolicyTest, RegisteredPoliciesRunAPipeline) {
  auto perf = core::PerfModel::BuiltIn();
  for (const char* policy : {"dilu", "has-gpu", "quart", "inferline", "cocktail", "infless"}) {
    SimConfig c = NetConfig(2);
    for (core::NodeSpec& n : c.cluster.nodes)
      n.gpu_count = 4;
    c.network->gpus_per_node = 4;
    c.horizon = absl::Seconds(20);
    const char* models[] = {"bert-base", "resnet152", "vgg19"};
    for (int i = 0; i < 3; ++i) {
      FunctionConfig f = StageFunction("p", i, 3, models[i], core::Bytes(i < 2 ? 4'000'000 : 0));
      f.quota = core::SmQuota{0.3, 0.6};
      f.max_batch = 4;
      f.max_queue_delay = absl::Milliseconds(5);
      f.slo = absl::Milliseconds(200);
      f.max_instances = 4;
      c.functions.push_back(f);
    }
    c.functions[0].workload = testing::Poisson(40);
    c.pipelines = {PipelineOf("p", c.functions, absl::Milliseconds(600))};
    auto r = RunSimulation(c, PolicyConfig{policy, "", {}}, WorkloadVariant{}, *perf, "p.yaml");
    ASSERT_TRUE(r.ok()) << policy << ": " << r.status();
    ASSERT_EQ(r->pipelines.size(), 1u);
    const PipelineResult& p = r->pipelines[0];
    EXPECT_GT(p.completed, 0.9 * p.requests) << policy;
    EXPECT_EQ(p.stages.size(), 3u);
    EXPECT_EQ(r->functions[2].completed, p.completed) << policy;
    std::printf("%-9s %lld/%lld p50 %.1f ms p99 %.1f ms replicas %.2f %.2f %.2f key %d%d%d\n",
                policy, static_cast<long long>(p.completed), static_cast<long long>(p.requests),
                p.p50_ms, p.p99_ms, p.stages[0].mean_replicas, p.stages[1].mean_replicas,
                p.stages[2].mean_replicas, p.stages[0].key_stage_ever, p.stages[1].key_stage_ever,
                p.stages[2].key_stage_ever);
    // Packed stages on one GPU hand over instantly; the parts still add up.
    double parts = 0;
    for (const StageResult& s : p.stages)
      parts += s.mean_sojourn_ms + s.mean_transfer_ms;
    if (p.dropped == 0) {
      EXPECT_NEAR(p.mean_ms, parts, 1e-6 * p.mean_ms) << policy;
    }
  }
}

}  // namespace
}  // namespace sluice::sim

namespace sluice::sim {
namespace {

// quart (merged from i11-quartpol) drives the pipeline through its PipelineScaler: under a load a
// single replica per stage cannot carry it scales stages out, marks key stages, serves the load.
TEST(PipelinePolicyTest, QuartScalesAnOverloadedPipeline) {
  auto perf = core::PerfModel::BuiltIn();
  SimConfig c = NetConfig(4);
  for (core::NodeSpec& n : c.cluster.nodes)
    n.gpu_count = 4;
  c.network->gpus_per_node = 4;
  c.horizon = absl::Seconds(30);
  const char* models[] = {"bert-base", "resnet152", "vgg19"};
  for (int i = 0; i < 3; ++i) {
    FunctionConfig f = StageFunction("p", i, 3, models[i], core::Bytes(i < 2 ? 4'000'000 : 0));
    f.quota = core::SmQuota{0.3, 0.6};
    f.max_batch = 4;
    f.max_queue_delay = absl::Milliseconds(5);
    f.slo = absl::Milliseconds(200);
    f.max_instances = 8;
    c.functions.push_back(f);
  }
  c.functions[0].workload = testing::Poisson(150);
  c.pipelines = {PipelineOf("p", c.functions, absl::Milliseconds(600))};
  auto r = RunSimulation(c, PolicyConfig{"quart", "", {}}, WorkloadVariant{}, *perf, "p.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  const PipelineResult& p = r->pipelines[0];
  double replicas = 0;
  bool key = false;
  for (const StageResult& s : p.stages) {
    replicas += s.mean_replicas;
    key = key || s.key_stage_ever;
  }
  std::printf("quart overload: %lld/%lld p50 %.1f p99 %.1f replicas %.2f %.2f %.2f\n",
              static_cast<long long>(p.completed), static_cast<long long>(p.requests), p.p50_ms,
              p.p99_ms, p.stages[0].mean_replicas, p.stages[1].mean_replicas,
              p.stages[2].mean_replicas);
  EXPECT_GT(replicas, 3.5);
  EXPECT_TRUE(key);
  EXPECT_GT(p.completed, 0.9 * p.requests);
}

}  // namespace
}  // namespace sluice::sim
