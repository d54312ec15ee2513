// The built-in model catalogue behind PerfModel::BuiltIn(): model facts (sizes, kinds) and the
// analytic parameters fitted by sluice_sim_perf_fit, shipped as constants (docs/perf-model.md
// gives provenance and fit error). Used by PerfModel and by tests. Thread-safe: constants.
#ifndef SLUICE_CORE_PERF_BUILTIN_MODELS_H_
#define SLUICE_CORE_PERF_BUILTIN_MODELS_H_

#include <vector>

#include "core/perf/analytic_latency_model.h"
#include "core/perf/perf_model.h"

namespace sluice::core {

struct BuiltInModel {
  ModelInfo info;
  AnalyticParams params;
};

// The catalogue, in a fixed order: resnet152, vgg19, bert-base, roberta-large, gpt2-large,
// llama2-7b, chatglm3-6b. Times are on the GPU of Dilu's bs_sm profiles.
std::vector<BuiltInModel> BuiltInModels();

// Dilu-GPU / gpulet-GPU latency ratio for the same model (resnet152), used to move the vgg19 fit
// made on gpulet's rows onto Dilu's GPU.
extern const double kGpuletToDiluTimeScale;

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_BUILTIN_MODELS_H_
