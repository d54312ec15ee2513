// Pipeline-stage profiles of QUART's large models (issue 11; QUART Table 1: Whisper-9B, BERT-21B,
// LLaMA-7B, OPT-66B, WideResNet): a model split evenly into N stages (DeepSpeed-style, by
// layers), each stage with its own latency model, parameter bytes, GPU memory and the activation
// bytes it hands to the next stage per request. Used by the simulator's experiment loader (which
// expands `pipeline: {stages: N}` into stage functions and registers the stage models in the
// PerfModel), by the policy factories (service rates) and by the platform's example pipeline.
// Sizes come from the public model cards and Table 1; per-stage times from Table 1's standalone
// execution time and the shared profiles (docs/perf-model.md says what is estimated).
// Pure; thread-safe (constants and value results).
//
// CONTRACT (lead, issue 11): shared by src/sim/experiment, src/sim/engine, src/core/registry and
// examples/pipeline. Extend, do not change.
#ifndef SLUICE_CORE_PERF_PIPELINE_PROFILE_H_
#define SLUICE_CORE_PERF_PIPELINE_PROFILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/units.h"
#include "core/perf/perf_model.h"

namespace sluice::core {

struct PipelineModelInfo {
  std::string name;               // canonical: "whisper-9b", "bert-21b", "llama-7b", ...
  common::Bytes param_bytes;      // Table 1 "Size"
  int layers = 0;                 // the unit an even split divides (transformer blocks, ...)
  int tokens = 0;                 // Table 1 "Token" (sequence length per request; 0: n/a)
  absl::Duration standalone_exec; // Table 1 "Exec." at batch 1 on one GPU, whole model
  int max_batch = 8;              // largest batch a stage serves
};

struct StageProfile {
  int index = 0;
  int count = 1;
  std::string model_key;          // StageModelName(model, index, count): the PerfModel entry
  common::Bytes param_bytes;      // this stage's parameters (what a cold start loads)
  common::Bytes gpu_memory;       // one stage replica's GPU footprint
  common::Bytes activation_out;   // per request, to stage index + 1 (0 for the last stage)
  absl::Duration exec_batch1;     // this stage's batch-1 latency at a whole GPU
  double service_cv = 0.2;        // CV of the stage's service time
  double cpu_slowdown = 0;        // CPU worker time / GPU time (0: not runnable on CPU)
};

// Known pipeline models, sorted.
std::vector<std::string> PipelineModelNames();
// NotFound listing the known names.
absl::StatusOr<PipelineModelInfo> FindPipelineModel(std::string_view name);

// "<model>/s<index>of<count>", e.g. "llama-7b/s3of8".
std::string StageModelName(std::string_view model, int index, int count);

// Added (pipeexp): the parts of a StageModelName, so that a caller holding only a stage
// function's model key (the CLI registering stage models for a loaded experiment) can rebuild
// it. InvalidArgument when `name` is not "<model>/s<index>of<count>" with 0 <= index < count.
struct StageModelRef {
  std::string model;
  int index = 0;
  int count = 1;
};
absl::StatusOr<StageModelRef> ParseStageModelName(std::string_view name);

// Splits `model` evenly into `stages` stages. InvalidArgument naming `field` (the caller's
// YAML path, e.g. "functions[2].pipeline.stages") when stages < 1 or does not divide the model's
// layers (the message says which counts do); NotFound for an unknown model.
absl::StatusOr<std::vector<StageProfile>> SplitPipeline(std::string_view model, int stages,
                                                        std::string_view field);

// Registers each stage of SplitPipeline(model, stages) in `perf` under its model_key (kind
// kInference, latency in batch and SM share). Same errors as SplitPipeline.
[[nodiscard]] absl::Status AddPipelineStages(PerfModel& perf, std::string_view model, int stages,
                                             std::string_view field);

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_PIPELINE_PROFILE_H_
