// sluice-example-classifier: an inference function (docs/platform.md "Instance API") serving a
// 2-layer MLP classifier on the GPU through the CUDA driver API. Model: $SLUICE_MODEL_PATH
// ("seed:N" or a weights JSON file; default seed 42). Spec: classifier.yaml.
#include <cstdio>
#include <cstdlib>

#include "classifier.h"
#include "runtime/sdk/function_server.h"

int main() {
  using sluice::runtime::BatchHandler;
  std::unique_ptr<sluice::runtime::CudaGpu> gpu;
  std::unique_ptr<sluice::examples::Classifier> model;
  const char* path = std::getenv("SLUICE_MODEL_PATH");
  absl::StatusOr<sluice::examples::MlpWeights> weights =
      sluice::examples::MlpWeights::Load(path != nullptr ? path : "");
  if (!weights.ok()) {
    std::fprintf(stderr, "classifier: %s\n", weights.status().ToString().c_str());
    return 1;
  }
  const int in_dim = weights->in_dim;
  std::string name = "classifier";
  return sluice::runtime::RunFunction(
      "classifier",
      [&](sluice::runtime::FunctionOptions& o) {
        name = o.name;
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
        absl::StatusOr<std::unique_ptr<sluice::runtime::CudaGpu>> g =
            sluice::runtime::CudaGpu::Init();
        if (!g.ok()) {
          return g.status();
        }
        gpu = *std::move(g);
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
      });
}
