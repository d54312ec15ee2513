// `sluice sim predict --model NAME --batch B --sm S --quota Q [--json]` and
// `sluice sim predictor-eval [--folds K] [--seed N] [--json]`: the resource-aware latency
// predictor (core/perf/quota_predictor.h) on the RaPP V100 table (src/sim/predictor). `predict`
// treats NAME as a new model: trained on every other model, calibrated on NAME's six profiled
// configurations. Registered under `sim` by RegisterSim. Exit codes: 0 ok, 2 bad input (sm or
// quota outside (0, 1], batch < 1, unknown model, a configuration outside the trained data, the
// table absent), 1 other failures. Not thread-safe (one call at a time per output stream).
#ifndef SLUICE_SIM_CLI_PREDICT_COMMAND_H_
#define SLUICE_SIM_CLI_PREDICT_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace sluice::sim {

struct SimPredictOptions {
  std::string model;
  int batch = 1;
  double sm = 1.0;     // SM partition, fraction in (0, 1]
  double quota = 1.0;  // time quota, fraction in (0, 1]
  bool json = false;
};

// JSON: {"model", "batch", "sm", "quota", "latency_ms", "throughput_rps", "measured_ms"
// (null when the table lacks the configuration), "profiled": [{"batch","sm","quota"}...]}.
int RunPredictCommand(const SimPredictOptions& options, std::ostream& out, std::ostream& err);

struct SimPredictorEvalOptions {
  int folds = 0;  // 0 = leave one model out
  uint64_t seed = 1;
  bool json = false;
};

// JSON: PredictorEvalJson (src/sim/predictor/predictor_eval.h).
int RunPredictorEvalCommand(const SimPredictorEvalOptions& options, std::ostream& out,
                            std::ostream& err);

// Adds `predict` and `predictor-eval` to the `sim` command group.
void RegisterSimPredict(CLI::App& sim, int& exit_code);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_PREDICT_COMMAND_H_
