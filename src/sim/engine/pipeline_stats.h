// Bookkeeping for pipeline functions in the simulator (issue 11): time averages of piecewise-
// constant counts (queue length, replicas, busy servers), and the per-stage and
// per-pipeline state the engine keeps (engine.h, pipeline.cc, pipeline_scaling.cc). Value types
// with no policy in them; not thread-safe.
#ifndef SLUICE_SIM_ENGINE_PIPELINE_STATS_H_
#define SLUICE_SIM_ENGINE_PIPELINE_STATS_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"

#include "common/env.h"
#include "core/policy/pipeline.h"
#include "core/serving/arrival_stats.h"
#include "sim/engine/instance.h"
#include "sim/engine/sim_config.h"

namespace sluice::sim {

// Time-weighted mean over [start, end] of a value that changes by steps.
class TimeAverage {
 public:
  TimeAverage() = default;
  TimeAverage(absl::Time start, absl::Time end) : start_(start), end_(end), last_(start) {}
  void Add(absl::Time now, double delta) {
    Integrate(now);
    value_ += delta;
  }
  double value() const { return value_; }
  // Mean over [start, min(now, end)]; 0 for an empty window.
  double Mean(absl::Time now) {
    Integrate(now);
    const double span = absl::ToDoubleSeconds(std::min(now, end_) - start_);
    return span > 0 ? integral_ / span : 0.0;
  }

 private:
  void Integrate(absl::Time now) {
    const absl::Time t = std::min(now, end_);
    if (t > last_) {
      integral_ += value_ * absl::ToDoubleSeconds(t - last_);
      last_ = t;
    }
  }
  absl::Time start_, end_, last_;
  double value_ = 0;
  double integral_ = 0;
};

// A sum and a count (mean of sojourns, transfer times).
struct MeanAcc {
  double sum = 0;
  int64_t n = 0;
  void Add(double v) {
    sum += v;
    ++n;
  }
  double Mean() const { return n > 0 ? sum / static_cast<double>(n) : 0.0; }
};

// One stage function of a pipeline: its place in the pipeline and what is measured there.
struct StageState {
  int pipeline = -1;  // index into SimConfig::pipelines
  int index = 0;      // position in the pipeline
  int next_fn = -1;   // the next stage's function index (-1: last stage)
  bool key = false;   // key stage in the latest pipeline decision
  bool key_ever = false;
  std::vector<int32_t> cpu_workers;  // deployed CPU workers (loading or warm)
  // Time averages over [0, horizon].
  TimeAverage waiting;       // held + queued at instances (not executing, not in transfer)
  TimeAverage gpu_replicas;  // deployed GPU replicas (loading or warm)
  TimeAverage cpu_deployed;  // deployed CPU workers
  TimeAverage servers;       // GPU replicas and CPU workers from placement to release
  TimeAverage busy;          // servers executing a batch
  // Arrivals at the stage (stage 0: the workload; others: hand-offs from the previous stage).
  core::ArrivalStats gaps_run, gaps_window;  // over the run; since the last scaler sample
  MeanAcc sojourn_run, sojourn_window;  // seconds, stage arrival -> completion there
  MeanAcc transfer;                     // seconds, activation transfer into this stage
};

// One pipeline: its stage functions in order, its scaler (when the policy makes one) and the
// end-to-end latencies of completed requests.
struct PipelineState {
  const PipelineConfig* config = nullptr;
  std::vector<int> stages;  // function indices, in order
  std::unique_ptr<core::PipelineScaler> scaler;
  common::Env::TimerId wakeup = 0;
  std::vector<double> latency_ms;
};

// A request inside a pipeline, between its stage-0 arrival and its last stage's completion.
struct PipeRequest {
  absl::Time origin;   // stage-0 arrival
  absl::Time handoff;  // the previous stage completed it (entered the current stage)
  absl::Time sent;     // its activation transfer started
  int32_t from = -1;   // instance (or CPU worker) that ran the previous stage; -1: none
  int32_t to = -1;     // instance (or CPU worker) its activations are in transfer to
  Request req;         // the request while its activations are in transfer
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_PIPELINE_STATS_H_
