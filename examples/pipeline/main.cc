// sluice-example-pipeline: one stage of the example pipeline (examples/pipeline/README.md). The
// controller starts one process per stage replica with SLUICE_STAGE_INDEX / SLUICE_STAGE_COUNT
// (and the spec's env: STAGE_MS, STAGE_MS_PER_ITEM, ACTIVATION_BYTES); each batch sleeps the
// stage's model time on the SDK's worker thread. No GPU work: timing only (emulated device).
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include "absl/time/clock.h"

#include "runtime/sdk/function_server.h"
#include "stage.h"

extern char** environ;

int main() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos)
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  absl::StatusOr<sluice::examples::StageConfig> config = sluice::examples::StageConfigFromEnv(env);
  if (!config.ok()) {
    std::fprintf(stderr, "sluice-example-pipeline: %s\n", config.status().ToString().c_str());
    return 2;
  }
  return sluice::runtime::RunFunction(
      "pipeline-stage",
      [&](sluice::runtime::FunctionOptions& o) {
        o.sample_request = {
            {"inputs", {{{"name", "x"}, {"shape", {1}}, {"datatype", "FP32"}, {"data", {1.0}}}}}};
      },
      [&]() -> absl::StatusOr<sluice::runtime::BatchHandler> {
        return sluice::runtime::BatchHandler(
            [c = *config](std::span<const sluice::runtime::InferRequest> batch) {
              return sluice::examples::RunStageBatch(c, batch,
                                                     [](absl::Duration d) { absl::SleepFor(d); });
            });
      });
}
