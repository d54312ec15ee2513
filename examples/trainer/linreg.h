// The trainer example's model: full-batch gradient descent on a synthetic linear-regression
// problem (y = X w* + noise, generated from a seed) held on the GPU. Each Step launches the
// residual and update kernels plus modelled compute (spin blocks) and synchronises - one
// iteration boundary for the token server. Thread-compatible: one caller at a time.
#ifndef SLUICE_EXAMPLES_TRAINER_LINREG_H_
#define SLUICE_EXAMPLES_TRAINER_LINREG_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

#include "runtime/sdk/cuda_gpu.h"

namespace sluice::examples {

struct LinRegProblem {
  int samples = 256;
  int features = 16;
  float learning_rate = 0.1f;
  std::vector<float> x;       // samples x features, row-major, uniform in [-1, 1]
  std::vector<float> y;       // samples
  std::vector<float> w_true;  // features

  // Deterministic problem from `seed`; noise amplitude `noise` (uniform in +-noise).
  static LinRegProblem Generate(uint64_t seed, float noise);
};

class LinRegTrainer {
 public:
  static absl::StatusOr<std::unique_ptr<LinRegTrainer>> Create(runtime::CudaGpu& gpu,
                                                               LinRegProblem problem);
  // One gradient step from the current weights; returns the mean squared error of the weights
  // before the step.
  absl::StatusOr<double> Step();
  // Current weights, copied from the device.
  absl::StatusOr<std::vector<float>> Weights();
  const LinRegProblem& problem() const { return problem_; }

 private:
  LinRegTrainer(runtime::CudaGpu& gpu, LinRegProblem p) : gpu_(gpu), problem_(std::move(p)) {}

  runtime::CudaGpu& gpu_;
  LinRegProblem problem_;
  runtime::Kernel residual_, update_;
  runtime::DevicePtr x_ = 0, y_ = 0, w_ = 0, r_ = 0;
};

}  // namespace sluice::examples

#endif  // SLUICE_EXAMPLES_TRAINER_LINREG_H_
