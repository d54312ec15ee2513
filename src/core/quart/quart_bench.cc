// Decision cost of QUART's policies at 10,000 stages (docs/PERFORMANCE.md): QuartScaler's
// Observe + Decide for 1,250 eight-stage pipelines (every stage through detection, the PID,
// smoothing and CPU compensation; loads drawn so some stages congest and some have surplus), and
// DispersedPlacement of 10,000 stage instances (30 % key) on 1,250 nodes x 8 GPUs with 4 cached
// stages per node; the PID corrector alone at 10,000 stages; and QuartPlacement, the
// PlacementPolicy the quart set uses, placing 10,000 instances one by one through ClusterState
// (each committed and reported, as the simulator does). Fixed seed. Run: BUILD_DIR=build
// scripts/build quart_bench &&
//   build/src/core/quart/quart_bench
#include <memory>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"

#include "core/quart/dispersed_placement.h"
#include "core/quart/pid_corrector.h"
#include "core/quart/quart_placement.h"
#include "core/quart/quart_scaler.h"

namespace sluice::core {
namespace {

constexpr int kStagesPerPipeline = 8;

QuartConfig PipelineConfig() {
  QuartConfig c;
  QuartStageSpec s;
  s.service_rps = 10;
  s.max_replicas = 64;
  s.latency_target = absl::Milliseconds(300);
  c.stages.assign(kStagesPerPipeline, s);
  return c;
}

void BM_QuartScalerDecide(benchmark::State& state) {
  const int pipelines = static_cast<int>(state.range(0)) / kStagesPerPipeline;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::unique_ptr<QuartScaler>> scalers;
  std::vector<std::vector<StageSample>> samples(pipelines);
  for (int p = 0; p < pipelines; ++p) {
    scalers.push_back(std::move(*QuartScaler::Create(PipelineConfig())));
    for (int i = 0; i < kStagesPerPipeline; ++i) {
      StageSample s;
      s.arrival_rps = 20 + 60 * u(rng);
      s.arrival_cv = 4 * u(rng);
      s.ready_replicas = 1 + static_cast<int>(rng() % 12);
      s.queue_length = 20 * u(rng);
      s.measured_latency = absl::Milliseconds(100 + 900 * u(rng));
      samples[p].push_back(s);
    }
  }
  absl::Time now = absl::FromUnixSeconds(0);
  for (auto _ : state) {
    now += absl::Seconds(1);
    for (int p = 0; p < pipelines; ++p) {
      scalers[p]->Observe(samples[p], now);
      benchmark::DoNotOptimize(scalers[p]->Decide(now, 64));
    }
  }
  state.counters["stages"] = pipelines * kStagesPerPipeline;
}
BENCHMARK(BM_QuartScalerDecide)->Arg(8)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_DispersedPlacement(benchmark::State& state) {
  const int requests = static_cast<int>(state.range(0));
  const int nodes_count = std::max(1, requests / 8);
  std::mt19937 rng(42);
  std::vector<CacheNode> nodes(nodes_count);
  for (int j = 0; j < nodes_count; ++j) {
    nodes[j].id = common::NodeId(j);
    nodes[j].free_gpus = 8;
    for (int k = 0; k < 4; ++k) {
      nodes[j].cached.push_back(
          {common::FunctionId(rng() % 1250), static_cast<int>(rng() % kStagesPerPipeline)});
    }
  }
  std::vector<StageRequest> reqs;
  for (int r = 0; r < requests; ++r) {
    reqs.push_back(
        {{common::FunctionId(r / kStagesPerPipeline), r % kStagesPerPipeline}, rng() % 10 < 3, 1});
  }
  const DispersedPlacement placement = *DispersedPlacement::Create({});
  PlacementOutcome out;
  for (auto _ : state) {
    out = placement.Place(nodes, reqs);
    benchmark::DoNotOptimize(out);
  }
  state.counters["placed"] = out.placed;
  state.counters["cache_hits"] = out.cache_hits;
  state.counters["kl_after"] = out.kl_after;
  // For comparison: the key requests dropped uniformly at random on nodes with room.
  std::vector<int> free(nodes_count, 8), keys(nodes_count, 0);
  for (const StageRequest& r : reqs) {
    int j = static_cast<int>(rng() % nodes_count);
    while (free[j] == 0)
      j = (j + 1) % nodes_count;
    --free[j];
    if (r.key)
      ++keys[j];
  }
  state.counters["kl_random"] = KlFromUniform(keys);
}
BENCHMARK(BM_DispersedPlacement)->Arg(80)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_PidCorrector(benchmark::State& state) {
  const int stages = static_cast<int>(state.range(0));
  std::vector<PidCorrector> pids(stages, *PidCorrector::Create({}));
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(-1.0, 4.0);
  std::vector<double> errors(stages);
  for (double& e : errors)
    e = u(rng);
  for (auto _ : state) {
    double sum = 0;
    for (int i = 0; i < stages; ++i)
      sum += pids[i].Update(errors[i], absl::Seconds(1), false);
    benchmark::DoNotOptimize(sum);
  }
  state.counters["stages"] = stages;
}
BENCHMARK(BM_PidCorrector)->Arg(10000)->Unit(benchmark::kMicrosecond);

// Places `requests` instances (30 % key, 4 cached nodes each) one by one on requests / 8
// (fill 1: the cluster ends full) or requests / 4 nodes (fill 2: half full) x 8 GPUs, committing
// each; the cluster is rebuilt outside the timing each iteration. kl_random: the same stream
// placed on uniformly random nodes with room.
void BM_QuartPlacementPolicy(benchmark::State& state) {
  const int requests = static_cast<int>(state.range(0));
  const int nodes = std::max(1, requests / (8 / static_cast<int>(state.range(1))));
  NodeSpec node;
  node.gpu_count = 8;
  std::mt19937 rng(42);
  std::vector<InstanceDemand> demands(requests);
  for (int r = 0; r < requests; ++r) {
    InstanceDemand& d = demands[r];
    d.function = FunctionId(r / kStagesPerPipeline);
    d.instance = InstanceId(r);
    d.memory_per_gpu = Bytes::GiB(10);
    d.pipeline_stage = r % kStagesPerPipeline;
    d.key_stage = rng() % 10 < 3;
    for (int k = 0; k < 4; ++k)
      d.cached_on.push_back(NodeId(rng() % nodes));
  }
  double kl = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState cluster(ClusterSpec::Uniform(nodes, node));
    auto placement = *QuartPlacement::Create({});
    state.ResumeTiming();
    for (const InstanceDemand& d : demands) {
      absl::StatusOr<std::vector<GpuId>> gpus = placement->Place(d, cluster);
      if (!gpus.ok())
        continue;
      const Allocation a{d.instance, d.function, gpus->front(), d.memory_per_gpu, SmQuota{1, 1}};
      if (cluster.Add(a).ok())
        placement->OnAdded(a, cluster);
    }
    kl = placement->KeyKl();
  }
  state.counters["kl_after"] = kl;
  std::vector<int> free(nodes, 8), keys(nodes, 0);
  for (const InstanceDemand& d : demands) {
    int j = static_cast<int>(rng() % nodes);
    for (int tries = 0; free[j] == 0 && tries < nodes; ++tries)
      j = (j + 1) % nodes;
    if (free[j] == 0)
      continue;
    --free[j];
    keys[j] += d.key_stage;
  }
  state.counters["kl_random"] = KlFromUniform(keys);
}
BENCHMARK(BM_QuartPlacementPolicy)
    ->Args({10000, 1})
    ->Args({10000, 2})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::core

BENCHMARK_MAIN();
