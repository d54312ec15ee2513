// Entry point of the discrete-event simulator: runs one (policy, workload variant) pair of an
// experiment under virtual time (common::SimEnv) and returns its metrics. Called by the experiment
// loader / CLI (src/sim/experiment, src/sim/cli), the engine tests and the engine benchmark.
// RunSimulation is reentrant: each call owns all of its state (no globals), so distinct calls may
// run on distinct threads; a TimelineSink is used by one call at a time.
#ifndef SLUICE_SIM_ENGINE_SIMULATION_H_
#define SLUICE_SIM_ENGINE_SIMULATION_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/perf/perf_model.h"
#include "sim/engine/sim_config.h"

namespace sluice::sim {

// Receives the engine's event log: one line per event, already formatted as
// "<virtual seconds, 6 decimals> <function name or '-'> <event> key=value...", e.g.
//   "12.345000 f0 cold_start inst=3 load_s=4.000000 source=storage"
// Lines arrive in virtual-time order (ties in event order). Golden tests diff them. Events:
// place, cold_start (load_s, source=storage|host_cache), warm, drain (outstanding), gone,
// place_failed, batch_start / batch_done (size), drop (n, reason), train_done (iters, jct_s).
// Per-request arrivals and training iterations are NOT logged (they would dwarf the rest).
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  virtual void Append(absl::string_view line) = 0;
};

// Collects every line into one string, each followed by '\n'. For tests and `--event-log`.
class StringTimelineSink : public TimelineSink {
 public:
  void Append(absl::string_view line) override {
    text_.append(line.data(), line.size());
    text_.push_back('\n');
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Runs `config` under `policy` with the arrivals of `workload` (a function missing from
// workload.overrides keeps FunctionConfig::workload). The run is deterministic given
// config.seed: the same inputs give an identical RunResult and event log.
//
// Arrivals are generated over [0, config.horizon); after the horizon no new request arrives,
// scaling stops, requests held for a function with no instance are dropped, and queues and
// training jobs drain for at most config.drain_timeout (what is still unfinished then counts as
// dropped / unfinished). Cluster metrics and RunResult::timeline cover [0, horizon]; definitions
// in src/sim/engine/README.md and metrics.h.
//
// Errors (nothing is half-run): the policy name or params are rejected by the registry, a
// function names a model `perf` does not know, a workload file is missing or malformed, or an
// initial instance cannot be placed. Messages name `config_file` where the input came from it.
// `event_log` may be null (no log is built, which is faster).
absl::StatusOr<RunResult> RunSimulation(const SimConfig& config, const PolicyConfig& policy,
                                        const WorkloadVariant& workload,
                                        const core::PerfModel& perf, std::string_view config_file,
                                        TimelineSink* event_log = nullptr);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_SIMULATION_H_
