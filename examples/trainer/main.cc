// sluice-example-trainer: a training-style function. Gradient descent on a synthetic linear
// regression on the GPU (CUDA driver API); $SLUICE_ITERATIONS steps (default 1000), one JSON
// line per logged step ({"event":"step","step":i,"loss":L}, every $SLUICE_LOG_EVERY steps,
// default iterations/10, and the last), exit 0 when done. Spec: trainer.yaml.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"

#include "linreg.h"
#include "runtime/sdk/training.h"

namespace {

int64_t EnvInt(const char* name, int64_t fallback) {
  int64_t v = fallback;
  const char* s = std::getenv(name);
  if (s == nullptr || !absl::SimpleAtoi(s, &v) || v < 1) {
    return fallback;
  }
  return v;
}

}  // namespace

int main() {
  using sluice::examples::LinRegTrainer;
  std::unique_ptr<sluice::runtime::CudaGpu> gpu;
  std::unique_ptr<LinRegTrainer> trainer;
  int64_t iterations = 1000;
  int64_t counted = 0;
  return sluice::runtime::RunTraining(
      "trainer", 1000,
      [&](sluice::runtime::TrainingOptions& o) {
        iterations = o.iterations;
        o.memory_bytes = [&gpu] {
          return gpu ? gpu->peak_bytes() : int64_t{0};
        };
      },
      [&]() -> absl::StatusOr<sluice::runtime::StepFn> {
        absl::StatusOr<std::unique_ptr<sluice::runtime::CudaGpu>> g =
            sluice::runtime::CudaGpu::Init();
        if (!g.ok()) {
          return g.status();
        }
        gpu = *std::move(g);
        auto t = LinRegTrainer::Create(*gpu, sluice::examples::LinRegProblem::Generate(
                                                 EnvInt("SLUICE_TRAINER_SEED", 7), 0.01f));
        if (!t.ok()) {
          return t.status();
        }
        trainer = *std::move(t);
        const int64_t log_every = EnvInt("SLUICE_LOG_EVERY", std::max<int64_t>(1, iterations / 10));
        return sluice::runtime::StepFn([&, log_every](int64_t step) -> absl::Status {
          absl::StatusOr<double> loss = trainer->Step();
          if (!loss.ok()) {
            return loss.status();
          }
          if (!std::isfinite(*loss)) {
            return absl::InternalError("loss is not finite");
          }
          ++counted;
          if (step % log_every == 0 || counted == iterations) {
            std::printf("{\"event\":\"step\",\"step\":%lld,\"loss\":%.9g}\n",
                        static_cast<long long>(step), *loss);
            std::fflush(stdout);
          }
          return absl::OkStatus();
        });
      });
}
