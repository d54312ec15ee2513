// Engine throughput benchmarks (docs/PERFORMANCE.md records the numbers and this command):
//   BUILD_DIR=build scripts/build sim_engine_bench && build/src/sim/engine/sim_engine_bench
// BM_EngineEventsPerSecond: the target scenario, a 1,000-node x 4-GPU cluster with 3,200
//   instances (100 functions x 32) of the built-in CNN/encoder models under MPS-r, Poisson load
//   at ~half of each instance's capacity, batches of up to 4. Reports engine events per
//   wall-second and the process's peak RSS (VmHWM, read from /proc/self/status).
// Rates are per CPU-second of the (single) benchmark thread, so that a busy shared machine
// does not distort them; the Time column shows the wall clock.
// BM_EngineGrowth: the same density at 100 / 1,000 / 10,000 nodes (instances and load scale with
//   the cluster) and reports simulated seconds per wall-second.
// BM_EnginePipeline (issue 11): 100 nodes x 4 GPUs, 32 pipelines of 4 stages (the built-in models,
//   8 instances per stage under MPS-r, 4 MB of activations per hop crossing the flow network),
//   Poisson load at ~half the first stage's capacity, 20 s.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"

#include "core/perf/perf_model.h"
#include "sim/engine/simulation.h"

namespace sluice::sim {
namespace {

// Peak resident set of this process in MiB (VmHWM), or -1 if unavailable.
double PeakRssMiB() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr)
    return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmHWM:", 6) == 0)
      kib = std::strtod(line + 6, nullptr);
  }
  std::fclose(f);
  return kib / 1024.0;
}

const core::PerfModel& Perf() {
  static const core::PerfModel* perf = core::PerfModel::BuiltIn().release();
  return *perf;
}

// `nodes` x 4 GPUs; 0.8 instances per GPU spread over functions of 32 instances each.
SimConfig BenchConfig(int nodes, absl::Duration horizon) {
  SimConfig c;
  c.experiment = "engine-bench";
  core::NodeSpec n;
  n.gpu_count = 4;
  c.cluster = core::ClusterSpec::Uniform(nodes, n);
  c.horizon = horizon;
  c.drain_timeout = absl::Seconds(30);
  const char* models[] = {"resnet152", "vgg19", "bert-base", "roberta-large", "gpt2-large"};
  const int functions = nodes * 4 * 8 / 10 / 32;
  for (int i = 0; i < functions; ++i) {
    FunctionConfig f;
    f.name = absl::StrCat("f", i);
    f.model = models[i % 5];
    f.quota = core::SmQuota{0.3, 0.6};
    f.memory = core::Bytes::GiB(4);
    f.slo = absl::Milliseconds(200);
    f.max_batch = 4;
    f.max_queue_delay = absl::Milliseconds(5);
    f.initial_instances = f.min_instances = f.max_instances = 32;
    const core::ModelEntry* e = *Perf().Find(f.model);
    const double batch_s = absl::ToDoubleSeconds(e->latency->BatchLatency(4, 0.3));
    f.workload.kind = WorkloadKind::kPoisson;
    f.workload.rate_rps = 0.5 * 32 * 4 / batch_s;
    c.functions.push_back(std::move(f));
  }
  return c;
}

void RunBench(benchmark::State& state, int nodes, absl::Duration horizon) {
  const SimConfig c = BenchConfig(nodes, horizon);
  int64_t events = 0;
  for (auto _ : state) {
    auto r = RunSimulation(c, PolicyConfig{"mps-r", "", {}}, WorkloadVariant{}, Perf(), "bench");
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    events += r->events;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(
      absl::ToDoubleSeconds(horizon) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / state.iterations();
  state.counters["instances"] = c.functions.size() * 32.0;
  state.counters["peak_rss_mib"] = PeakRssMiB();
}

void BM_EngineEventsPerSecond(benchmark::State& state) {
  RunBench(state, 1000, absl::Seconds(state.range(0)));
}
BENCHMARK(BM_EngineEventsPerSecond)->Arg(20)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_EngineGrowth(benchmark::State& state) {
  RunBench(state, static_cast<int>(state.range(0)), absl::Seconds(2));
}
// 32 pipelines x 4 stages x 8 instances on 100 x 4 GPUs (2.56 per GPU at share 0.3).
SimConfig PipelineBenchConfig(absl::Duration horizon) {
  SimConfig c;
  c.experiment = "engine-bench-pipeline";
  core::NodeSpec n;
  n.gpu_count = 4;
  c.cluster = core::ClusterSpec::Uniform(100, n);
  c.horizon = horizon;
  c.drain_timeout = absl::Seconds(30);
  const char* models[] = {"resnet152", "vgg19", "bert-base", "roberta-large"};
  for (int p = 0; p < 32; ++p) {
    PipelineConfig pc;
    pc.name = absl::StrCat("p", p);
    pc.slo = absl::Seconds(1);
    double rps = 1e9;
    for (int i = 0; i < 4; ++i) {
      FunctionConfig f;
      f.name = absl::StrCat(pc.name, "/s", i);
      f.model = models[(p + i) % 4];
      f.quota = core::SmQuota{0.3, 0.6};
      f.memory = core::Bytes::GiB(4);
      f.slo = absl::Milliseconds(200);
      f.max_batch = 4;
      f.max_queue_delay = absl::Milliseconds(5);
      f.initial_instances = f.min_instances = f.max_instances = 8;
      PipelineStageConfig st{pc.name, i, 4, core::Bytes(i < 3 ? 4'000'000 : 0), {}};
      f.stage = st;
      const core::ModelEntry* e = *Perf().Find(f.model);
      rps = std::min(rps, 8 * 4 / absl::ToDoubleSeconds(e->latency->BatchLatency(4, 0.3)));
      pc.stages.push_back(f.name);
      c.functions.push_back(std::move(f));
    }
    c.functions[c.functions.size() - 4].workload.kind = WorkloadKind::kPoisson;
    c.functions[c.functions.size() - 4].workload.rate_rps = 0.5 * rps;
    c.pipelines.push_back(std::move(pc));
  }
  return c;
}

void BM_EnginePipeline(benchmark::State& state) {
  const absl::Duration horizon = absl::Seconds(state.range(0));
  const SimConfig c = PipelineBenchConfig(horizon);
  int64_t events = 0;
  for (auto _ : state) {
    auto r = RunSimulation(c, PolicyConfig{"mps-r", "", {}}, WorkloadVariant{}, Perf(), "bench");
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    events += r->events;
    state.counters["e2e_p99_ms"] = r->pipelines[0].p99_ms;
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["sim_s_per_wall_s"] = benchmark::Counter(
      absl::ToDoubleSeconds(horizon) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / state.iterations();
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK(BM_EnginePipeline)->Arg(20)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK(BM_EngineGrowth)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace sluice::sim
