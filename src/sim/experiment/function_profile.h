// Dilu's multi-factor profiler (core/dilu) run against the performance model for one simulated
// function: the SM <request, limit> quota, the batch size and the serving capacity the experiment
// loader uses when a function gives no `quota:`, and what `sluice sim profile` prints. Records
// every trial. Stateless functions; a call borrows its profiler and model only for its duration.
#ifndef SLUICE_SIM_EXPERIMENT_FUNCTION_PROFILE_H_
#define SLUICE_SIM_EXPERIMENT_FUNCTION_PROFILE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/dilu/profiler.h"
#include "core/perf/perf_model.h"
#include "core/resource/cluster.h"

namespace sluice::sim {

enum class ProfileMethod { kHybridGrowth, kTraversal };

// What to profile. Defaults match FunctionConfig's.
struct ProfileTarget {
  core::FunctionKind kind = core::FunctionKind::kInference;
  absl::Duration slo = absl::Milliseconds(100);  // per request; unused for training
  int prompt_tokens = 256;                       // LLM: prefill work in the capacity
  int output_tokens = 128;                       // LLM: per-token SLO = slo / output_tokens
  // Inference and LLM: search the SM share for this batch only (an explicit max_batch, or an
  // exponential-service function's batch 1) instead of growing the batch.
  std::optional<int> fixed_batch;
  ProfileMethod method = ProfileMethod::kHybridGrowth;  // inference and LLM only
};

// One pre-running trial as the performance model answered it, in the order run.
struct TrialRecord {
  double sm_share = 0;
  int batch = 1;
  absl::Duration latency;  // batch latency; LLM: one decode step; training: one iteration
  double throughput = 0;   // requests/s (LLM: tokens/s; training: samples/s)
};

struct FunctionProfile {
  core::SmQuota quota;
  int batch = 1;   // chosen batch (inference, LLM); 1 for training
  int trials = 0;  // distinct trials the profiler ran
  // Serving throughput of one instance at quota.request and `batch` (requests/s): batch /
  // BatchLatency for inference; batch / (Prefill(prompt x batch) + output x decode step) for
  // LLMs, as the engine serves them; 0 for training.
  double capacity_rps = 0;
  absl::Duration profiled_slo;  // the SLO handed to the profiler (LLM: per output token)
  std::vector<TrialRecord> log;
};

// A function whose quota the experiment loader took from the profiler.
struct ProfiledFunction {
  std::string function;
  FunctionProfile profile;
};

// Profiles `model` as `target.kind`. Inference (not fixed_batch): Hybrid Growth Search (or the
// traversal baseline) over <SM share, batch>; with fixed_batch the same search with the batch
// pinned, i.e. the smallest SM step meeting slo_fraction x SLO at that batch. request = the
// optimum share, limit = min(1, limit_factor x request). LLMs: the same with the per-token SLO.
// Training: binary search at request_fraction / limit_fraction of exclusive throughput.
// InvalidArgument for a traversal of training, bad tokens or batch; FailedPrecondition when no
// share meets the SLO (the message gives the target) or training throughput is zero.
absl::StatusOr<FunctionProfile> ProfileFunction(const core::Profiler& profiler,
                                                const core::ModelEntry& model,
                                                const ProfileTarget& target);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_EXPERIMENT_FUNCTION_PROFILE_H_
