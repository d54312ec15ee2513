// The golden "pipeline_burst" scenario (issue 11): a three-stage pipeline (20 ms, 80 ms, 20 ms
// per request on an exclusive GPU; 10 MB of activations between stages over 1 GB/s NICs) on
// three nodes of two GPUs follows testdata/pipeline_burst_rps.txt (10 s at 5 req/s, 15 s at 25,
// 15 s at 5). A fake PipelineScaler (testing::QueueStepPipelineScaler) scales only the middle
// stage: one replica more while its queue holds more than 5 requests (a key stage), one fewer
// when its queue is empty and its load fits in fewer. The burst congests the middle stage, which
// scales out and, after the burst, back in; the other stages keep one replica. The event log
// (without batch lines) is diffed against testdata/pipeline_burst.golden (scripts/update-goldens).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

#include "sim/engine/engine_test_util.h"
#include "sim/engine/testing/fake_pipeline.h"

namespace sluice::sim {
namespace {

using testing::ReadFile;
using testing::SourceDir;

SimConfig PipelineBurstConfig(core::PerfModel& perf) {
  SimConfig c = testing::SmallConfig(3, 2);
  c.experiment = "pipeline_burst";
  c.horizon = absl::Seconds(40);
  c.drain_timeout = absl::Seconds(10);
  core::net::ClusterNetSpec net;
  net.name = "golden";
  net.nodes = 3;
  net.gpus_per_node = 2;
  net.rdma_gbps = 8;
  c.network = net;
  const double ms[] = {20, 80, 20};
  for (int i = 0; i < 3; ++i) {
    const std::string model = absl::StrCat("m", i);
    testing::AddLinearModel(perf, model, absl::Milliseconds(ms[i]));
    FunctionConfig f =
        testing::StageFunction("p", i, 3, model, core::Bytes(i < 2 ? 10'000'000 : 0));
    f.max_instances = 4;
    c.functions.push_back(f);
  }
  WorkloadSpec burst;
  burst.kind = WorkloadKind::kRpsSeries;
  burst.path = SourceDir() + "/src/sim/engine/testdata/pipeline_burst_rps.txt";
  c.functions[0].workload = burst;
  c.pipelines = {testing::PipelineOf("p", c.functions, absl::Milliseconds(500))};
  c.pipelines[0].slo_base = absl::Milliseconds(140);
  c.pipelines[0].slo_multipliers = {1, 2, 3};
  return c;
}

std::string WithoutBatches(const std::string& log) {
  std::string out;
  for (absl::string_view l : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    if (l.find(" batch_") == absl::string_view::npos)
      absl::StrAppend(&out, l, "\n");
  }
  return out;
}

int Count(const std::string& log, const std::string& what) {
  int n = 0;
  for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1))
    ++n;
  return n;
}

TEST(PipelineGoldenTest, BurstScalesTheCongestedMiddleStageOutAndBack) {
  core::PerfModel perf;
  const SimConfig c = PipelineBurstConfig(perf);
  testing::FakePolicyOptions o;
  o.pipeline = [](const std::vector<core::FunctionTraits>& t,
                  const std::vector<core::PipelineStageTraits>&, absl::Duration) {
    return std::make_unique<testing::QueueStepPipelineScaler>(t, 1, 5.0);
  };
  auto out = testing::RunFake(c, std::move(o), perf);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::string& log = out->log;
  const PipelineResult& p = out->result.pipelines[0];
  // Only the middle stage scales: out during the burst, back in after it.
  EXPECT_EQ(Count(log, "p/s0 place"), 1);
  EXPECT_EQ(Count(log, "p/s2 place"), 1);
  EXPECT_GE(Count(log, "p/s1 place"), 3);
  EXPECT_GE(Count(log, "p/s1 drain"), 1);
  EXPECT_TRUE(p.stages[1].key_stage_ever);
  EXPECT_FALSE(p.stages[0].key_stage_ever);
  EXPECT_GT(p.stages[1].mean_replicas, 1.3);
  EXPECT_GT(p.stages[1].mean_queue_length, p.stages[0].mean_queue_length);
  // 10 MB per hop: 10 ms over an idle 1 GB/s NIC, 0.3 ms over PCIe inside a node (s0 -> s1's
  // first replica on node 0, s1's first new replica -> s2 on node 1); the rest cross NICs.
  EXPECT_GT(p.stages[1].mean_transfer_ms, 0.3);
  EXPECT_LT(p.stages[1].mean_transfer_ms, 15);
  EXPECT_GT(p.stages[2].mean_transfer_ms, 5);
  EXPECT_LT(p.stages[2].mean_transfer_ms, 15);
  EXPECT_EQ(p.dropped, 0);
  EXPECT_EQ(p.completed, p.requests);
  EXPECT_GT(p.requests, 400);
  EXPECT_GT(p.svr, 0);  // the burst's first seconds queue at the middle stage
  std::printf("p50 %.1f ms, p99 %.1f ms, svr %.3f, goodput %.2f req/s, s1 replicas %.2f\n",
              p.p50_ms, p.p99_ms, p.svr, p.goodput_rps, p.stages[1].mean_replicas);
  const std::string got = WithoutBatches(log);
  const std::string path = SourceDir() + "/src/sim/engine/testdata/pipeline_burst.golden";
  if (std::getenv("SLUICE_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  const std::string want = ReadFile(path);
  ASSERT_FALSE(want.empty()) << "missing " << path << " (run scripts/update-goldens)";
  EXPECT_TRUE(want == got) << "pipeline_burst.golden differs: scripts/update-goldens, review it";
}

}  // namespace
}  // namespace sluice::sim
