// The classifier example's model: a 2-layer MLP (dense + ReLU, dense) over an FP32 feature
// vector, softmax on the host. Weights come from a JSON file or are generated from a seed. The
// batch runs as one launch per layer on the GPU (PTX on a real device, registered host bodies on
// the emulated one) plus modelled compute time (spin blocks). Thread-compatible: one caller at a
// time (the SDK's worker thread).
#ifndef SLUICE_EXAMPLES_CLASSIFIER_CLASSIFIER_H_
#define SLUICE_EXAMPLES_CLASSIFIER_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "nlohmann/json.hpp"
#include "runtime/sdk/cuda_gpu.h"
#include "runtime/sdk/kserve.h"

namespace sluice::examples {

struct MlpWeights {
  int in_dim = 16, hidden = 32, classes = 4;
  std::vector<float> w1, b1;  // hidden x in_dim (row-major), hidden
  std::vector<float> w2, b2;  // classes x hidden, classes

  // Deterministic weights from `seed` (xorshift64*, uniform in +-1/sqrt(fan_in)).
  static MlpWeights FromSeed(uint64_t seed);
  // {"in_dim", "hidden", "classes", "w1", "b1", "w2", "b2"}; InvalidArgument naming the field.
  static absl::StatusOr<MlpWeights> FromJson(const std::string& text);
  // "seed:N" -> FromSeed(N); "" -> FromSeed(42); anything else is a JSON file path.
  static absl::StatusOr<MlpWeights> Load(const std::string& model_path);
};

class Classifier {
 public:
  static absl::StatusOr<std::unique_ptr<Classifier>> Create(runtime::CudaGpu& gpu,
                                                            MlpWeights weights,
                                                            std::string model_name);
  // One result per request: outputs "scores" (FP32 [rows, classes], softmax) and "class" (INT64
  // [rows]). Input: the tensor named "x" (else the first), shape [in_dim] or [rows, in_dim].
  std::vector<runtime::InferResult> Infer(std::span<const runtime::InferRequest> batch);
  // A KServe v2 request with one all-ones row, for profiling trials.
  nlohmann::json SampleRequest() const;
  int in_dim() const { return weights_.in_dim; }

 private:
  Classifier(runtime::CudaGpu& gpu, MlpWeights w, std::string name)
      : gpu_(gpu), weights_(std::move(w)), name_(std::move(name)) {}
  absl::Status Upload();
  absl::Status EnsureCapacity(int64_t rows);
  // Runs both layers and the modelled compute for `rows` rows; returns the logits.
  absl::StatusOr<std::vector<float>> Forward(const std::vector<float>& x, int64_t rows);

  runtime::CudaGpu& gpu_;
  MlpWeights weights_;
  std::string name_;
  runtime::Kernel dense_;
  runtime::DevicePtr w1_ = 0, b1_ = 0, w2_ = 0, b2_ = 0;
  runtime::DevicePtr x_ = 0, h_ = 0, logits_ = 0;
  int64_t capacity_rows_ = 0;
};

}  // namespace sluice::examples

#endif  // SLUICE_EXAMPLES_CLASSIFIER_CLASSIFIER_H_
