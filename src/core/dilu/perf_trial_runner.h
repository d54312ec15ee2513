// PerfModelTrialRunner: the simulator's TrialRunner. A "pre-running trial" of a model at an SM
// share and batch is answered by the performance model (core/perf) instead of a GPU, so the
// profiler can derive Dilu quotas for any catalogue model. ProfileModel picks the training or
// inference search by the model's kind. Stateless apart from the borrowed model entry; not
// thread-safe only in that a runner is used by one profiler call at a time.
#ifndef SLUICE_CORE_DILU_PERF_TRIAL_RUNNER_H_
#define SLUICE_CORE_DILU_PERF_TRIAL_RUNNER_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/dilu/profiler.h"
#include "core/perf/perf_model.h"

namespace sluice::core {

class PerfModelTrialRunner final : public TrialRunner {
 public:
  // Borrows `model`, which must outlive the runner.
  // Inference: latency = BatchLatency(batch, share), throughput = batch / latency (requests/s).
  // LLMs: BatchLatency is one decode step, so latency is the time per output token of `batch`
  // concurrent sequences and the SLO given to the profiler is a per-token SLO.
  // Training: latency = IterationTime(share), throughput = training_batch / latency (samples/s).
  // Memory: the model's inference footprint (ModelInfo::gpu_memory).
  explicit PerfModelTrialRunner(const ModelEntry& model) : model_(model) {}
  absl::StatusOr<TrialResult> Run(const Trial& trial) override;

 private:
  const ModelEntry& model_;
};

// Training models (FunctionKind::kTraining) get ProfileTraining, the others ProfileInference
// with `slo` (ignored for training).
absl::StatusOr<Profile> ProfileModel(const Profiler& profiler, const ModelEntry& model,
                                     FunctionKind kind, absl::Duration slo);

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_PERF_TRIAL_RUNNER_H_
