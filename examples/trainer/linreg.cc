// LinRegTrainer: the loss is computed on the host from the residuals the GPU produced, so a
// wrong kernel (or emulated body) shows up as a loss that does not fall.
#include "linreg.h"

#include <cmath>

#include "common/status.h"
#include "kernels_ptx.h"

namespace sluice::examples {
namespace {

constexpr unsigned kThreads = 128;
// Modelled compute per step: 1 ms at 108 SMs (100 us blocks).
constexpr int64_t kBlocksPerStep = 1080;

float* F(void** p, int i) {
  return reinterpret_cast<float*>(*static_cast<uint64_t*>(p[i]));
}
unsigned U(void** p, int i) {
  return *static_cast<unsigned*>(p[i]);
}

// Emulated stand-ins for sluice_residual / sluice_sgd_update: same guards, same fma order.
void ResidualBody(void** p, SluiceEmuDim3 grid, SluiceEmuDim3 block, void*) {
  const float *x = F(p, 0), *y = F(p, 1), *w = F(p, 2);
  float* r = F(p, 3);
  const unsigned n = U(p, 4), d = U(p, 5);
  for (uint64_t i = 0; i < uint64_t{grid.x} * block.x && i < n; ++i) {
    float acc = -y[i];
    for (unsigned j = 0; j < d; ++j) {
      acc = std::fma(x[i * d + j], w[j], acc);
    }
    r[i] = acc;
  }
}

void UpdateBody(void** p, SluiceEmuDim3 grid, SluiceEmuDim3 block, void*) {
  const float *x = F(p, 0), *r = F(p, 1);
  float* w = F(p, 2);
  const unsigned n = U(p, 3), d = U(p, 4);
  const float lr = *static_cast<float*>(p[5]);
  for (uint64_t j = 0; j < uint64_t{grid.x} * block.x && j < d; ++j) {
    float g = 0.0f;
    for (unsigned i = 0; i < n; ++i) {
      g = std::fma(r[i], x[i * d + j], g);
    }
    w[j] = w[j] - lr * (2.0f * g / static_cast<float>(n));
  }
}

float Uniform(uint64_t& state) {
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  const uint64_t r = state * 2685821657736338717ULL;
  return static_cast<float>(r >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f;
}

}  // namespace

LinRegProblem LinRegProblem::Generate(uint64_t seed, float noise) {
  LinRegProblem p;
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (int j = 0; j < p.features; ++j) {
    p.w_true.push_back(Uniform(state));
  }
  for (int i = 0; i < p.samples; ++i) {
    float y = noise * Uniform(state);
    for (int j = 0; j < p.features; ++j) {
      p.x.push_back(Uniform(state));
      y += p.x.back() * p.w_true[j];
    }
    p.y.push_back(y);
  }
  return p;
}

absl::StatusOr<std::unique_ptr<LinRegTrainer>> LinRegTrainer::Create(runtime::CudaGpu& gpu,
                                                                     LinRegProblem problem) {
  std::unique_ptr<LinRegTrainer> t(new LinRegTrainer(gpu, std::move(problem)));
  SLUICE_RETURN_IF_ERROR(
      gpu.RegisterEmulated({{"sluice_residual", {8, 8, 8, 8, 4, 4}, ResidualBody},
                            {"sluice_sgd_update", {8, 8, 8, 4, 4, 4}, UpdateBody}}));
  SLUICE_ASSIGN_OR_RETURN(std::vector<runtime::Kernel> k,
                          gpu.LoadModule(kKernelsPtx, {"sluice_residual", "sluice_sgd_update"}));
  t->residual_ = k[0];
  t->update_ = k[1];
  const LinRegProblem& p = t->problem_;
  const std::vector<float> zeros(p.features, 0.0f);
  const size_t f = sizeof(float);
  SLUICE_ASSIGN_OR_RETURN(t->x_, gpu.Alloc(p.x.size() * f));
  SLUICE_ASSIGN_OR_RETURN(t->y_, gpu.Alloc(p.y.size() * f));
  SLUICE_ASSIGN_OR_RETURN(t->w_, gpu.Alloc(zeros.size() * f));
  SLUICE_ASSIGN_OR_RETURN(t->r_, gpu.Alloc(p.y.size() * f));
  SLUICE_RETURN_IF_ERROR(gpu.CopyHtoD(t->x_, p.x.data(), p.x.size() * f));
  SLUICE_RETURN_IF_ERROR(gpu.CopyHtoD(t->y_, p.y.data(), p.y.size() * f));
  SLUICE_RETURN_IF_ERROR(gpu.CopyHtoD(t->w_, zeros.data(), zeros.size() * f));
  return t;
}

absl::StatusOr<double> LinRegTrainer::Step() {
  unsigned n = problem_.samples, d = problem_.features;
  float lr = problem_.learning_rate;
  void* residual[] = {&x_, &y_, &w_, &r_, &n, &d};
  void* update[] = {&x_, &r_, &w_, &n, &d, &lr};
  SLUICE_RETURN_IF_ERROR(gpu_.Launch(residual_, (n + kThreads - 1) / kThreads, kThreads, residual));
  SLUICE_RETURN_IF_ERROR(gpu_.Launch(update_, (d + kThreads - 1) / kThreads, kThreads, update));
  SLUICE_RETURN_IF_ERROR(gpu_.Spin(runtime::ModelledBlocks(1, kBlocksPerStep, 0)));
  SLUICE_RETURN_IF_ERROR(gpu_.Synchronize());
  std::vector<float> r(n);
  SLUICE_RETURN_IF_ERROR(gpu_.CopyDtoH(r.data(), r_, r.size() * sizeof(float)));
  double loss = 0;
  for (float v : r) {
    loss += double{v} * v;
  }
  return loss / n;
}

absl::StatusOr<std::vector<float>> LinRegTrainer::Weights() {
  std::vector<float> w(problem_.features);
  SLUICE_RETURN_IF_ERROR(gpu_.CopyDtoH(w.data(), w_, w.size() * sizeof(float)));
  return w;
}

}  // namespace sluice::examples
