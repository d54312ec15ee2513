#include "sim/predictor/predictor_eval.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

#include "core/perf/builtin_models.h"
#include "core/perf/perf_fit.h"
#include "sim/predictor/rapp_data.h"

namespace sluice::sim {
namespace {

using core::ProfilePoint;

bool InPlan(const ProfilePoint& p) {
  for (const core::ProfileConfig& c : core::kProfilePlan) {
    if (p.batch == c.batch && std::abs(p.sm_share - c.sm_share) < 1e-9 &&
        std::abs(p.time_quota - c.time_quota) < 1e-9)
      return true;
  }
  return false;
}

struct Sums {
  double sum = 0, max = 0;
  int n = 0;
  void Add(double ape) { sum += ape, max = std::max(max, ape), ++n; }
  double Mean() const { return n > 0 ? sum / n : 0; }
};

struct Scores {
  Sums all, low_q, low_s, sliced;
};

// Scores `model`'s non-plan rows with a predictor trained on `train`. False when the model
// lacks a plan point.
absl::StatusOr<bool> ScoreModel(const core::LatencyPredictor& lp, const std::string& model,
                                const std::vector<ProfilePoint>& own, Scores& s, double* mape,
                                const std::string& exclude) {
  absl::StatusOr<core::CalibratedPredictor> cp = lp.Calibrate(own, exclude);
  if (!cp.ok())
    return false;
  Sums m;
  for (const ProfilePoint& p : own) {
    if (InPlan(p))
      continue;
    double ape = 100 * std::abs(cp->Seconds(p.batch, p.sm_share, p.time_quota) - p.latency_s) /
                 p.latency_s;
    m.Add(ape), s.all.Add(ape);
    if (p.time_quota <= 0.3 + 1e-9)
      s.low_q.Add(ape);
    if (p.sm_share <= 0.2 + 1e-9)
      s.low_s.Add(ape);
    if (p.time_quota < 1)
      s.sliced.Add(ape);
  }
  *mape = m.Mean();
  return true;
}

std::vector<std::vector<std::string>> Folds(std::vector<std::string> models, int folds,
                                            uint64_t seed) {
  if (folds <= 0 || folds >= static_cast<int>(models.size())) {
    std::vector<std::vector<std::string>> out;
    for (std::string& m : models)
      out.push_back({std::move(m)});
    return out;
  }
  std::mt19937_64 rng(seed);
  std::shuffle(models.begin(), models.end(), rng);
  std::vector<std::vector<std::string>> out(folds);
  for (size_t i = 0; i < models.size(); ++i)
    out[i % folds].push_back(models[i]);
  return out;
}

}  // namespace

absl::StatusOr<PredictorEval> EvaluatePredictor(const std::vector<ProfilePoint>& points,
                                                const PredictorEvalOptions& options) {
  if (options.folds == 1 || options.folds < 0)
    return absl::InvalidArgumentError("folds: must be 0 (leave one model out) or >= 2");
  PredictorEval e;
  e.points_per_model = core::kProfilePlan.size();
  std::vector<std::string> names = ModelNames(points);
  std::vector<std::vector<std::string>> folds = Folds(names, options.folds, options.seed);
  e.folds = folds.size();
  Scores held;
  for (const std::vector<std::string>& fold : folds) {
    std::vector<ProfilePoint> train = points;
    absl::flat_hash_set<std::string> out(fold.begin(), fold.end());
    std::erase_if(train, [&out](const ProfilePoint& p) { return out.contains(p.model); });
    absl::StatusOr<core::LatencyPredictor> lp = core::LatencyPredictor::Train(train,
                                                                              options.predictor);
    if (!lp.ok())
      return lp.status();
    for (const std::string& m : fold) {
      double mape = 0;
      absl::StatusOr<bool> ok = ScoreModel(*lp, m, PointsOf(points, m), held, &mape, "");
      if (!ok.ok())
        return ok.status();
      if (*ok)
        e.per_model[m] = mape, ++e.models;
      else
        ++e.skipped_models;
    }
  }
  e.mape_unseen_models = held.all.Mean();
  e.max_ape_unseen = held.all.max;
  e.mape_low_quota = held.low_q.Mean();
  e.mape_low_sm = held.low_s.Mean();
  e.mape_sliced_unseen = held.sliced.Mean();
  e.rows = held.all.n;
  // In-sample: one predictor on every model; a model is still calibrated from its own six
  // points, but its own curve may be among the neighbours (RaPP's "unseen configurations").
  absl::StatusOr<core::LatencyPredictor> all = core::LatencyPredictor::Train(points,
                                                                             options.predictor);
  if (!all.ok())
    return all.status();
  Scores in;
  for (const std::string& m : names) {
    double unused = 0;
    absl::StatusOr<bool> ok = ScoreModel(*all, m, PointsOf(points, m), in, &unused, "");
    if (!ok.ok())
      return ok.status();
  }
  e.mape = in.all.Mean();
  // The analytic model's global quota term (the catalogue's "every other model" parameters).
  for (const core::BuiltInModel& b : core::BuiltInModels()) {
    if (b.info.name == "bert-base")
      e.mape_analytic_quota = core::MeasureQuotaFit(b.params.quota, points).mape;
  }
  return e;
}

std::string PredictorEvalJson(const PredictorEval& e) {
  nlohmann::ordered_json j;
  j["mape"] = e.mape;
  j["mape_unseen_models"] = e.mape_unseen_models;
  j["max_ape_unseen_models"] = e.max_ape_unseen;
  j["mape_low_quota"] = e.mape_low_quota;
  j["mape_low_sm"] = e.mape_low_sm;
  j["mape_time_sliced_unseen_models"] = e.mape_sliced_unseen;
  j["mape_analytic_quota_term"] = e.mape_analytic_quota;
  j["points_per_model"] = e.points_per_model;
  j["rows"] = e.rows;
  j["models"] = e.models;
  j["skipped_models"] = e.skipped_models;
  j["folds"] = e.folds;
  j["per_model"] = e.per_model;
  return j.dump(2) + "\n";
}

std::string PredictorEvalText(const PredictorEval& e) {
  std::string s = absl::StrFormat(
      "predictor: %d held-out models (%d folds, %d skipped), %d rows, %d profiled points each\n"
      "  MAPE unseen models   %6.2f %%  (max %.1f %%)\n"
      "  MAPE q <= 0.3        %6.2f %%\n"
      "  MAPE s <= 0.2        %6.2f %%\n"
      "  MAPE q < 1           %6.2f %%  (analytic global quota term: %.2f %%)\n"
      "  MAPE in-sample       %6.2f %%\n"
      "per model:\n",
      e.models, e.folds, e.skipped_models, e.rows, e.points_per_model, e.mape_unseen_models,
      e.max_ape_unseen, e.mape_low_quota, e.mape_low_sm, e.mape_sliced_unseen,
      e.mape_analytic_quota, e.mape);
  for (const auto& [m, v] : e.per_model)
    absl::StrAppendFormat(&s, "  %-22s %6.2f %%\n", m, v);
  return s;
}

}  // namespace sluice::sim
