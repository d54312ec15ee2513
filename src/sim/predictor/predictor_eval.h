// Evaluation of the resource-aware predictor (core/perf/quota_predictor.h) on the RaPP table with
// models held out of training: k-fold by model (seeded) or leave-one-model-out, each held-out
// model calibrated on its six kProfilePlan points and scored on all its other rows. Also the
// in-sample error and the analytic perf model's global quota term on the same rows. Used by
// `sluice sim predictor-eval` and the data test. Thread-safe: pure function of its inputs.
#ifndef SLUICE_SIM_PREDICTOR_PREDICTOR_EVAL_H_
#define SLUICE_SIM_PREDICTOR_PREDICTOR_EVAL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "core/perf/profile_parsers.h"
#include "core/perf/quota_predictor.h"

namespace sluice::sim {

struct PredictorEvalOptions {
  int folds = 0;       // 0 = leave one model out; else k-fold by model, k in [2, models]
  uint64_t seed = 1;   // shuffles models into folds (k-fold only)
  core::PredictorOptions predictor;
};

// MAPE in percent.
struct PredictorEval {
  double mape = 0;                // in-sample: trained on all models (minus none), scored rows
  double mape_unseen_models = 0;  // held-out models (the headline figure)
  double max_ape_unseen = 0;
  double mape_low_quota = 0;  // held-out, rows with q <= 0.3
  double mape_low_sm = 0;     // held-out, rows with s <= 0.2
  double mape_sliced_unseen = 0;    // held-out, rows with q < 1
  double mape_analytic_quota = 0;   // analytic global quota term on rows with q < 1 (measured
                                    // t(b, s) as its base, i.e. favoured)
  int rows = 0;                     // scored rows (held-out evaluation)
  int models = 0;                   // models evaluated
  int skipped_models = 0;           // lacking a kProfilePlan point
  int points_per_model = 0;         // profiled configurations of a new model (6)
  int folds = 0;
  std::map<std::string, double> per_model;  // held-out MAPE per model
};

absl::StatusOr<PredictorEval> EvaluatePredictor(const std::vector<core::ProfilePoint>& points,
                                                const PredictorEvalOptions& options = {});

// {"mape", "mape_unseen_models", "points_per_model", "rows", ...} (docs in src/sim/cli/README.md)
std::string PredictorEvalJson(const PredictorEval& e);
std::string PredictorEvalText(const PredictorEval& e);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PREDICTOR_PREDICTOR_EVAL_H_
