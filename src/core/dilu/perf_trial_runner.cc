// PerfModelTrialRunner: one performance-model evaluation per trial.
#include "core/dilu/perf_trial_runner.h"

#include <algorithm>

namespace sluice::core {

absl::StatusOr<TrialResult> PerfModelTrialRunner::Run(const Trial& trial) {
  const double share = std::clamp(trial.sm_share, 0.01, 1.0);
  const int batch = std::max(trial.batch, 1);
  TrialResult r;
  r.memory = model_.info.gpu_memory;
  if (model_.info.kind == FunctionKind::kTraining) {
    r.latency = model_.latency->IterationTime(share);
    r.throughput = model_.info.training_batch / absl::ToDoubleSeconds(r.latency);
  } else {
    r.latency = model_.latency->BatchLatency(batch, share);
    r.throughput = batch / absl::ToDoubleSeconds(r.latency);
  }
  return r;
}

absl::StatusOr<Profile> ProfileModel(const Profiler& profiler, const ModelEntry& model,
                                     FunctionKind kind, absl::Duration slo) {
  ModelEntry as_kind = model;
  as_kind.info.kind = kind;
  PerfModelTrialRunner runner(as_kind);
  if (kind == FunctionKind::kTraining)
    return profiler.ProfileTraining(runner);
  return profiler.ProfileInference(runner, slo);
}

}  // namespace sluice::core
