// The RaPP / HAS-GPU V100 profile table (../shared/data/rapp-hasgpu-v100-sm-quota-profiles; no
// licence, so it is read in place and never copied into the repository) and the predictor-backed
// `rapp/<model>` perf models the simulator uses. Used by the `sim predict`, `sim predictor-eval`
// and `sim run` commands and by the data tests. Thread-safe: no shared state.
#ifndef SLUICE_SIM_PREDICTOR_RAPP_DATA_H_
#define SLUICE_SIM_PREDICTOR_RAPP_DATA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/perf/perf_model.h"
#include "core/perf/profile_parsers.h"
#include "core/perf/quota_predictor.h"

namespace sluice::sim {

// Where the table is: $SLUICE_DATA_DIR, else $SLUICE_SOURCE_DIR/../shared/data, else
// ../shared/data (relative to the working directory, i.e. the repository root), plus
// rapp-hasgpu-v100-sm-quota-profiles/rapp_latency_sm_quota_batch.csv(.xz).
std::string RappDataPath();

// Reads and parses the table. NotFound (naming the path and SLUICE_DATA_DIR) when it is absent.
absl::StatusOr<std::vector<core::ProfilePoint>> LoadRappProfiles();

// The points of one model (name compared after core::PerfModel::CanonicalName), and the rest.
std::vector<core::ProfilePoint> PointsOf(const std::vector<core::ProfilePoint>& all,
                                         absl::string_view model);
std::vector<core::ProfilePoint> PointsExcept(const std::vector<core::ProfilePoint>& all,
                                             absl::string_view model);
// The distinct model names, sorted.
std::vector<std::string> ModelNames(const std::vector<core::ProfilePoint>& all);

// Predicts `model` as a new one: trains on every OTHER model and calibrates on the model's
// kProfilePlan points. NotFound (listing a few known models) for an unknown model.
absl::StatusOr<core::CalibratedPredictor> PredictorFor(const std::vector<core::ProfilePoint>& all,
                                                       absl::string_view model);

// The perf-model names of the predictor-backed models: "rapp/" + the table's model name
// (e.g. rapp/resnet50, rapp/mobilenet_v3_large; PerfModel::Find also takes '-' for '_').
inline constexpr absl::string_view kRappPrefix = "rapp/";

// Adds to `perf` every `rapp/<model>` named in `text` (an experiment YAML), each a
// core::PredictorLatencyModel from PredictorFor. Does nothing (and reads no data) when `text`
// names none. NotFound when a named model is not in the table or the table is absent.
[[nodiscard]] absl::Status AddRappModelsNamedIn(absl::string_view text, core::PerfModel& perf);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PREDICTOR_RAPP_DATA_H_
