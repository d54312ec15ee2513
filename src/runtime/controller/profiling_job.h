// Profiling of a newly deployed function: ProfileWith runs Dilu's core::Profiler (the class the
// simulator runs) or, for a spec with a preset quota, one capacity trial, over any TrialRunner;
// RunProfilingJob does the real thing on a node (start a profiling instance through the agent,
// wait until ready, trials through HttpTrialRunner, delete it). Used by the controller daemon on a
// worker thread: RunProfilingJob blocks; ProfileWith is pure apart from its runner.
#ifndef SLUICE_RUNTIME_CONTROLLER_PROFILING_JOB_H_
#define SLUICE_RUNTIME_CONTROLLER_PROFILING_JOB_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/dilu/profiler.h"
#include "runtime/controller/agent_api.h"
#include "runtime/controller/function_record.h"
#include "runtime/http/http.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {

// Inference/LLM: ProfileInference(runner, slo) with max_batch capped by batching.max_batch;
// training: ProfileTraining(runner). With spec.quota: one trial at the request quota and batch =
// batching.max_batch (training: 1) gives the capacity (source "spec"). Errors name the cause:
// "SLO ... not met" (FailedPrecondition from the profiler), trial errors pass through. The
// result keeps every distinct trial as a TrialPoint (the latency model's data) and the spec's
// quota.time_quota (trials themselves run at time quota 1).
absl::StatusOr<ProfileInfo> ProfileWith(core::TrialRunner& runner, const FunctionSpec& spec,
                                        const core::ProfilerConfig& config);

struct ProfilingJob {
  FunctionSpec spec;
  http::Endpoint agent;
  int64_t instance_id = 0;
  ReportedGpu gpu;  // where the profiling instance runs
  std::vector<std::string> gpu_uuids;  // all of its GPUs (first = gpu.uuid); spec.gpus of them
  core::ProfilerConfig profiler;
  int trial_iterations = 5;
  absl::Duration ready_timeout = absl::Seconds(120);
  absl::Duration poll = absl::Milliseconds(50);
};

// Starts the profiling instance (request = limit = 1, restart never), waits until the agent
// reports it ready, runs ProfileWith over HttpTrialRunner, and deletes the instance on every
// path. Cancelled (Stop or delete) when `cancelled` becomes true while waiting.
absl::StatusOr<ProfileInfo> RunProfilingJob(const ProfilingJob& job,
                                            const std::atomic<bool>& cancelled);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_PROFILING_JOB_H_
