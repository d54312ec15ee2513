// sluice-example-classifier: an inference function (docs/platform.md "Instance API") serving a
// 2-layer MLP classifier on the GPU through the CUDA driver API. Model: the node's parameter
// store when the agent gives SLUICE_PARAMS_* (a weights JSON held in host memory), else
// $SLUICE_MODEL_PATH ("seed:N" or a weights JSON file; default seed 42). Spec: classifier.yaml.
// The driver is set up in `prestart`, so a pre-started pool process has its context before it
// knows its function (docs/platform.md "Cold starts").
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "classifier.h"
#include "runtime/sdk/function_server.h"
#include "runtime/sdk/instance_start.h"

namespace {

absl::StatusOr<sluice::examples::MlpWeights> LoadWeights() {
  absl::StatusOr<std::string> params = sluice::runtime::ReadInstanceParameters();
  if (!params.ok()) return params.status();
  const char* path = std::getenv("SLUICE_MODEL_PATH");
  if (!params->empty()) {
    absl::StatusOr<sluice::examples::MlpWeights> w = sluice::examples::MlpWeights::FromJson(*params);
    if (!w.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path != nullptr ? path : "parameters", ": ",
                                                     w.status().message()));
    }
    return w;
  }
  return sluice::examples::MlpWeights::Load(path != nullptr ? path : "");
}

}  // namespace

int main() {
  using sluice::runtime::BatchHandler;
  std::unique_ptr<sluice::runtime::CudaGpu> gpu;
  std::unique_ptr<sluice::examples::Classifier> model;
  std::string name = "classifier";
  int in_dim = 16;
  auto init_gpu = [&gpu]() -> absl::Status {
    if (gpu != nullptr) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<sluice::runtime::CudaGpu>> g = sluice::runtime::CudaGpu::Init();
    if (!g.ok()) return g.status();
    gpu = *std::move(g);
    return absl::OkStatus();
  };
  absl::StatusOr<sluice::examples::MlpWeights> weights = absl::UnknownError("not loaded");
  return sluice::runtime::RunFunction(
      "classifier",
      [&](sluice::runtime::FunctionOptions& o) {
        name = o.name;
        weights = LoadWeights();  // after a pool handoff the environment names the model
        if (weights.ok()) in_dim = weights->in_dim;
        o.sample_request = {{"id", "sample"},
                            {"inputs",
                             {{{"name", "x"},
                               {"shape", {1, in_dim}},
                               {"datatype", "FP32"},
                               {"data", std::vector<float>(in_dim, 1.0f)}}}}};
        o.memory_bytes = [&gpu] {
          return gpu ? gpu->peak_bytes() : int64_t{0};
        };
      },
      [&]() -> absl::StatusOr<BatchHandler> {
        if (!weights.ok()) return weights.status();
        if (absl::Status s = init_gpu(); !s.ok()) return s;
        auto m = sluice::examples::Classifier::Create(*gpu, *std::move(weights), name);
        if (!m.ok()) {
          return m.status();
        }
        model = *std::move(m);
        // Warm-up: anything the driver or the interception library sets up lazily happens now.
        std::vector<sluice::runtime::InferRequest> warm(1);
        warm[0].body = model->SampleRequest();
        if (!model->Infer(warm)[0].ok()) {
          return absl::InternalError("warm-up inference failed");
        }
        return BatchHandler(
            [&model](std::span<const sluice::runtime::InferRequest> b) { return model->Infer(b); });
      },
      init_gpu);
}
