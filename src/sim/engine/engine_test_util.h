// Helpers shared by the engine's tests: small configs on the fake model, trace files in a temp
// directory, a run wrapper returning the result and the event log, and a RunResult dump used to
// compare runs field by field. Test-only; not thread-safe.
#ifndef SLUICE_SIM_ENGINE_ENGINE_TEST_UTIL_H_
#define SLUICE_SIM_ENGINE_ENGINE_TEST_UTIL_H_

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

#include "common/status.h"
#include "sim/engine/engine.h"
#include "sim/engine/testing/fake_policy.h"

namespace sluice::sim::testing {

// One node of `gpus` GPUs; storage 1 GiB/s, PCIe 16 GiB/s, container start 2 s.
inline SimConfig SmallConfig(int nodes = 1, int gpus = 2) {
  SimConfig c;
  c.experiment = "engine-test";
  core::NodeSpec n;
  n.gpu_count = gpus;
  n.storage_bandwidth = core::Bandwidth::GiBPerSecond(1);
  n.pcie_bandwidth = core::Bandwidth::GiBPerSecond(16);
  c.cluster = core::ClusterSpec::Uniform(nodes, n);
  c.horizon = absl::Seconds(10);
  c.sample_interval = absl::Seconds(1);
  c.cold_start.container_start = absl::Seconds(2);
  return c;
}

inline FunctionConfig FakeFunction(const std::string& name, core::SmQuota quota,
                                   const WorkloadSpec& workload) {
  FunctionConfig f;
  f.name = name;
  f.model = "fake";
  f.quota = quota;
  f.memory = core::Bytes::GiB(2);
  f.slo = absl::Milliseconds(150);
  f.initial_instances = 1;
  f.min_instances = 1;
  f.workload = workload;
  return f;
}

inline WorkloadSpec Poisson(double rps) {
  WorkloadSpec w;
  w.kind = WorkloadKind::kPoisson;
  w.rate_rps = rps;
  return w;
}

// A request trace with one request at each of `times_s` (relative to the first).
inline WorkloadSpec Trace(const std::string& name, const std::vector<double>& times_s) {
  const std::string path = ::testing::TempDir() + "/" + name + ".csv";
  std::string text = "TIMESTAMP\n";
  for (double t : times_s)
    absl::StrAppend(&text, absl::StrFormat("%.6f\n", t));
  FILE* f = fopen(path.c_str(), "w");
  fputs(text.c_str(), f);
  fclose(f);
  WorkloadSpec w;
  w.kind = WorkloadKind::kRequestTrace;
  w.path = path;
  return w;
}

struct Outcome {
  RunResult result;
  std::string log;
};

inline absl::StatusOr<Outcome> RunWith(const SimConfig& config,
                                       std::unique_ptr<core::PolicySet> policy,
                                       const core::PerfModel& perf) {
  StringTimelineSink log;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> e,
                          Engine::Create(config, std::move(policy), "test", WorkloadVariant{}, perf,
                                         "test.yaml", &log));
  SLUICE_ASSIGN_OR_RETURN(RunResult r, e->Run());
  return Outcome{std::move(r), log.text()};
}

inline absl::StatusOr<Outcome> RunFake(const SimConfig& config, FakePolicyOptions o,
                                       const core::PerfModel& perf) {
  return RunWith(config, std::make_unique<FakePolicySet>(std::move(o)), perf);
}

// Every field of a RunResult, doubles printed exactly (%a), one line per item.
inline std::string Dump(const RunResult& r) {
  std::string s = absl::StrFormat(
      "%s %s gs=%a held=%a usd=%a peak=%d mean=%a sm=%a mem=%a fgd=%a ev=%d\n", r.policy,
      r.workload, r.gpu_seconds, r.held_gpu_seconds, r.cost_usd, r.peak_active_gpus,
      r.mean_active_gpus, r.sm_fragmentation, r.mem_fragmentation, r.fgd_fragmentation, r.events);
  for (const FunctionResult& f : r.functions) {
    absl::StrAppend(&s, absl::StrFormat("%s req=%d done=%d drop=%d p50=%a p95=%a p99=%a mean=%a "
                                        "svr=%a cs=%d vs=%d rej=%d thr=%a it=%a jct=%a usd=%a\n",
                                        f.name, f.requests, f.completed, f.dropped, f.p50_ms,
                                        f.p95_ms, f.p99_ms, f.mean_ms, f.svr, f.cold_starts,
                                        f.vertical_scalings, f.rejected_actions, f.throughput_rps,
                                        f.training_iters_per_s, f.jct_s, f.cost_usd));
  }
  for (const TimelineRow& t : r.timeline) {
    absl::StrAppend(
        &s, absl::StrFormat("t=%a act=%d alloc=%a sm=%a mem=%a n=%s rps=%s\n", t.t_s, t.active_gpus,
                            t.allocated_share, t.sm_fragmentation, t.mem_fragmentation,
                            absl::StrJoin(t.instances, ","), absl::StrJoin(t.rps, ",")));
  }
  return s;
}

// True if `log` has a line equal to `line`.
inline bool HasLine(const std::string& log, const std::string& line) {
  return absl::StrCat("\n", log).find(absl::StrCat("\n", line, "\n")) != std::string::npos;
}

// The repository root (ctest sets SLUICE_SOURCE_DIR), for goldens and fixtures.
inline std::string SourceDir() {
  const char* d = std::getenv("SLUICE_SOURCE_DIR");
  return d != nullptr ? d : ".";
}

// The whole file, or "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sluice::sim::testing

#endif  // SLUICE_SIM_ENGINE_ENGINE_TEST_UTIL_H_
