// The `sim predict` and `sim predictor-eval` handlers. CLI11 (which throws) is confined to
// RegisterSimPredict.
#include "sim/cli/predict_command.h"

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "CLI/CLI.hpp"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "sim/cli/sim_command.h"
#include "sim/predictor/predictor_eval.h"
#include "sim/predictor/rapp_data.h"

namespace sluice::sim {
namespace {

absl::Status CheckFraction(const char* field, double v) {
  if (!(v > 0 && v <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %g is outside (0, 1] (a fraction of the GPU)", field, v));
  }
  return absl::OkStatus();
}

std::optional<double> Measured(const std::vector<core::ProfilePoint>& own,
                               const SimPredictOptions& o) {
  for (const core::ProfilePoint& p : own) {
    if (p.batch == o.batch && std::abs(p.sm_share - o.sm) < 1e-9 &&
        std::abs(p.time_quota - o.quota) < 1e-9)
      return p.latency_s * 1e3;
  }
  return std::nullopt;
}

absl::Status Predict(const SimPredictOptions& o, std::ostream& out) {
  if (o.batch < 1)
    return absl::InvalidArgumentError(absl::StrCat("batch: ", o.batch, " is below 1"));
  SLUICE_RETURN_IF_ERROR(CheckFraction("sm", o.sm));
  SLUICE_RETURN_IF_ERROR(CheckFraction("quota", o.quota));
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::ProfilePoint> all, LoadRappProfiles());
  SLUICE_ASSIGN_OR_RETURN(core::CalibratedPredictor cp, PredictorFor(all, o.model));
  SLUICE_ASSIGN_OR_RETURN(double seconds, cp.Predict(o.batch, o.sm, o.quota));
  const std::optional<double> measured = Measured(PointsOf(all, o.model), o);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model, j["batch"] = o.batch, j["sm"] = o.sm, j["quota"] = o.quota;
    j["latency_ms"] = seconds * 1e3;
    j["throughput_rps"] = o.batch / seconds;
    j["measured_ms"] = measured ? nlohmann::ordered_json(*measured) : nullptr;
    j["profiled"] = nlohmann::ordered_json::array();
    for (const core::ProfileConfig& c : core::kProfilePlan)
      j["profiled"].push_back({{"batch", c.batch}, {"sm", c.sm_share}, {"quota", c.time_quota}});
    out << j.dump(2) << "\n";
  } else {
    out << absl::StrFormat("%s batch %d sm %g quota %g: %.3f ms (%.1f req/s)", o.model, o.batch,
                           o.sm, o.quota, seconds * 1e3, o.batch / seconds);
    if (measured)
      out << absl::StrFormat("; measured %.3f ms", *measured);
    out << "\n";
  }
  out.flush();
  return absl::OkStatus();
}

absl::Status Eval(const SimPredictorEvalOptions& o, std::ostream& out) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::ProfilePoint> all, LoadRappProfiles());
  PredictorEvalOptions eo;
  eo.folds = o.folds;
  eo.seed = o.seed;
  SLUICE_ASSIGN_OR_RETURN(PredictorEval e, EvaluatePredictor(all, eo));
  out << (o.json ? PredictorEvalJson(e) : PredictorEvalText(e));
  out.flush();
  return absl::OkStatus();
}

int Finish(const char* verb, const absl::Status& status, std::ostream& err) {
  if (status.ok())
    return 0;
  err << "sluice sim " << verb << ": " << status.message() << "\n";
  err.flush();
  return ExitCodeFor(status);
}

}  // namespace

int RunPredictCommand(const SimPredictOptions& options, std::ostream& out, std::ostream& err) {
  return Finish("predict", Predict(options, out), err);
}

int RunPredictorEvalCommand(const SimPredictorEvalOptions& options, std::ostream& out,
                            std::ostream& err) {
  return Finish("predictor-eval", Eval(options, out), err);
}

void RegisterSimPredict(CLI::App& sim, int& exit_code) {
  CLI::App* cmd = sim.add_subcommand(
      "predict", "resource-aware predictor: latency of (model, batch, SM partition, time quota)");
  auto o = std::make_shared<SimPredictOptions>();  // shared with the callback, which CLI11 copies
  cmd->add_option("--model", o->model, "a model of the RaPP table, e.g. resnet50")->required();
  cmd->add_option("--batch", o->batch, "batch size (default 1)");
  cmd->add_option("--sm", o->sm, "SM partition, fraction in (0, 1] (default 1)");
  cmd->add_option("--quota", o->quota, "time quota, fraction in (0, 1] (default 1)");
  cmd->add_flag("--json", o->json, "print JSON instead of text");
  cmd->callback([o, &exit_code] { exit_code = RunPredictCommand(*o, std::cout, std::cerr); });

  CLI::App* ev = sim.add_subcommand(
      "predictor-eval", "predictor MAPE on the RaPP table with models held out of training");
  auto e = std::make_shared<SimPredictorEvalOptions>();
  auto seed = std::make_shared<int64_t>(1);  // signed so that CLI11 rejects "-4"
  ev->add_option("--folds", e->folds, "k-fold by model; 0 = leave one model out (default)")
      ->check(CLI::Range(0, 1000));
  ev->add_option("--seed", *seed, "shuffle seed of the folds (default 1)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 62));
  ev->add_flag("--json", e->json, "print JSON instead of text");
  ev->callback([e, seed, &exit_code] {
    SimPredictorEvalOptions opts = *e;
    opts.seed = static_cast<uint64_t>(*seed);
    exit_code = RunPredictorEvalCommand(opts, std::cout, std::cerr);
  });
}

}  // namespace sluice::sim
