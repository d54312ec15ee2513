// The pipeline-stage example function (examples/pipeline, issue 11): stage i of N of a model
// served as a pipeline. Each request's input (the pipeline's input at stage 0, else the previous
// stage's activations: opaque bytes) is consumed, the stage's model time is spent, and
// `activation_bytes` of activations go out, with a "trace" output that lists every stage the
// request passed ("s0:<bytes in>,s1:<bytes in>,...") so a caller can check the chain.
// Used by main.cc (sluice-example-pipeline) and stage_test.cc. Thread safety: StageConfig is a
// value; RunStageBatch is reentrant (the time is spent by the caller's sleep hook).
#ifndef SLUICE_EXAMPLES_PIPELINE_STAGE_H_
#define SLUICE_EXAMPLES_PIPELINE_STAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/sdk/kserve.h"

namespace sluice::examples {

struct StageConfig {
  int index = 0;  // SLUICE_STAGE_INDEX (set by the controller for each stage function)
  int count = 1;  // SLUICE_STAGE_COUNT
  // Model time of one batch of b requests: base + per_item * b (STAGE_MS, STAGE_MS_PER_ITEM;
  // either may be a comma list with one value per stage).
  absl::Duration base = absl::Milliseconds(5);
  absl::Duration per_item = absl::Milliseconds(1);
  int64_t activation_bytes = 4096;  // ACTIVATION_BYTES (or a list per stage), >= 1
  // PIPELINE_MODEL (a core/perf/pipeline_profile model, e.g. "bert-21b"): the stage profile the
  // defaults of base, per_item and activation_bytes came from ("bert-21b/s1of4"); empty when
  // the times are configured.
  std::string profile_model;
  // Time for a batch of `b`.
  absl::Duration BatchTime(int64_t b) const { return base + per_item * b; }
};

// Reads the config from an environment map (keys above). With PIPELINE_MODEL, base / per_item
// are fitted through SplitPipeline(model, count)'s stage latency model (batches 1 and 2, whole
// GPU) and activation_bytes is its activation_out; STAGE_MS, STAGE_MS_PER_ITEM and
// ACTIVATION_BYTES, when set, override them. InvalidArgument naming the variable for a
// malformed value, an index outside [0, count), a list whose length is not count, or an unknown
// PIPELINE_MODEL / a stage count that does not divide its layers.
absl::StatusOr<StageConfig> StageConfigFromEnv(const std::map<std::string, std::string>& env);

// Runs one batch: checks each request has an input tensor, calls `spend(BatchTime(n))`, and
// answers each with {"activations" (BYTES, activation_bytes long), "trace"}. A request without
// "inputs" gets a 400 error naming the field.
std::vector<runtime::InferResult> RunStageBatch(const StageConfig& config,
                                                std::span<const runtime::InferRequest> batch,
                                                const std::function<void(absl::Duration)>& spend);

}  // namespace sluice::examples

#endif  // SLUICE_EXAMPLES_PIPELINE_STAGE_H_
