#include "core/perf/quota_predictor.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::core {
namespace {

constexpr double kMinArg = 0.01;

// Configuration key: batch, share and quota in thousandths.
using Key = std::tuple<int, int, int>;
Key KeyOf(int b, double s, double q) {
  return {b, static_cast<int>(std::lround(s * 1000)), static_cast<int>(std::lround(q * 1000))};
}

struct ModelData {
  std::string name;
  absl::flat_hash_map<Key, double> latency;  // seconds, duplicates averaged
};

double SmoothMax(double x, double y, double r) {
  double hi = std::max(x, y), lo = std::min(x, y);
  return hi * std::pow(1.0 + std::pow(lo / hi, r), 1.0 / r);
}

// The a with SmoothMax(a, c, p) == t; a small floor when c alone explains t.
double Sub(double t, double c, double p) {
  if (c >= 0.999 * t)
    return 0.05 * t;
  return std::max(0.05 * t, std::pow(std::pow(t, p) - std::pow(c, p), 1.0 / p));
}

double Clamp01(double x) {
  if (!(x >= kMinArg))
    return kMinArg;  // also NaN
  return std::min(x, 1.0);
}

std::string ConfigName(const ProfileConfig& c) {
  return absl::StrFormat("batch=%d sm=%g quota=%g", c.batch, c.sm_share, c.time_quota);
}

absl::Status CheckPoint(const ProfilePoint& p) {
  auto bad = [&p](absl::string_view field) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile point of model '", p.model, "' (line ", p.line, "): ", field,
                     " out of range"));
  };
  if (p.batch < 1)
    return bad("batch");
  if (!(p.sm_share > 0 && p.sm_share <= 1))
    return bad("sm_share");
  if (!(p.time_quota > 0 && p.time_quota <= 1))
    return bad("time_quota");
  if (!(p.latency_s > 0 && std::isfinite(p.latency_s)))
    return bad("latency");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ModelData>> Group(std::span<const ProfilePoint> points) {
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<ModelData> models;
  absl::flat_hash_map<std::pair<size_t, Key>, int> counts;
  for (const ProfilePoint& p : points) {
    if (absl::Status s = CheckPoint(p); !s.ok())
      return s;
    auto [it, inserted] = index.try_emplace(p.model, models.size());
    if (inserted)
      models.push_back({p.model, {}});
    Key k = KeyOf(p.batch, p.sm_share, p.time_quota);
    int& n = counts[{it->second, k}];
    double& v = models[it->second].latency[k];
    v = (v * n + p.latency_s) / (n + 1);
    ++n;
  }
  return models;
}

// The plan's latencies in kProfilePlan order, or the first missing configuration.
absl::StatusOr<std::array<double, 6>> PlanValues(
    const absl::flat_hash_map<Key, double>& latency) {
  std::array<double, 6> out{};
  for (size_t i = 0; i < kProfilePlan.size(); ++i) {
    const ProfileConfig& c = kProfilePlan[i];
    auto it = latency.find(KeyOf(c.batch, c.sm_share, c.time_quota));
    if (it == latency.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("profile lacks the configuration ", ConfigName(c),
                       " (every kProfilePlan configuration must be profiled)"));
    }
    out[i] = it->second;
  }
  return out;
}

struct SpatialFit {
  double a1 = 0, a8 = 0, k8 = 0;
};

// A_1, A_8, K_8 from T(1, 1), T(8, 1) and T(8, s_min), given the learned shape.
SpatialFit FitSpatialPlan(const std::array<double, 6>& plan, const SpatialShape& sh) {
  const double t11 = plan[0], t81 = plan[1], t8s = plan[2];
  const double s_min = kProfilePlan[2].sm_share;
  SpatialFit f;
  f.a8 = 0.5 * t81;
  for (int i = 0; i < 30; ++i) {
    f.k8 = Sub(t8s, f.a8, sh.p) * std::pow(s_min, sh.alpha);
    f.a8 = Sub(t81, f.k8, sh.p);
  }
  const double k1 = f.k8 * std::pow(1.0 / 8.0, sh.gamma);
  f.a1 = Sub(t11, k1, sh.p);
  f.a8 = std::max(f.a8, f.a1);  // monotone in batch
  return f;
}

double SpatialSeconds(const SpatialFit& f, const SpatialShape& sh, int batch, double s) {
  const double b = std::min(batch, 8);
  const double frac = std::log(b) / std::log(8.0);
  const double a = f.a1 * std::pow(f.a8 / f.a1, frac);
  const double k = f.k8 * std::pow(b / 8.0, sh.gamma);
  const double t = SmoothMax(a, k * std::pow(s, -sh.alpha), sh.p);
  return batch > 8 ? t * batch / 8.0 : t;
}

// Mean APE at q = 1 over the models, each fitted from its own plan points.
double SpatialError(const std::vector<const ModelData*>& models, const SpatialShape& sh) {
  double sum = 0;
  int n = 0;
  for (const ModelData* m : models) {
    SpatialFit f = FitSpatialPlan(*PlanValues(m->latency), sh);
    for (const auto& [key, t] : m->latency) {
      if (std::get<2>(key) != 1000)
        continue;
      double pred = SpatialSeconds(f, sh, std::get<0>(key), std::get<1>(key) / 1000.0);
      sum += std::abs(pred - t) / t;
      ++n;
    }
  }
  return n > 0 ? sum / n : INFINITY;
}

SpatialShape LearnShape(const std::vector<const ModelData*>& models) {
  SpatialShape best;
  double best_err = INFINITY;
  for (double alpha : {0.8, 0.9, 1.0, 1.1, 1.2}) {
    for (double p : {2.0, 3.0, 4.0, 6.0, 8.0}) {
      for (double gamma : {0.6, 0.7, 0.8, 0.9, 1.0}) {
        SpatialShape sh{alpha, p, gamma};
        double e = SpatialError(models, sh);
        if (e < best_err)
          best_err = e, best = sh;
      }
    }
  }
  return best;
}

PredictorDomain DomainOf(std::span<const ProfilePoint> points) {
  PredictorDomain d{1 << 30, 0, 1.0, 0.0, 1.0, 0.0};
  for (const ProfilePoint& p : points) {
    d.min_batch = std::min(d.min_batch, p.batch), d.max_batch = std::max(d.max_batch, p.batch);
    d.min_share = std::min(d.min_share, p.sm_share);
    d.max_share = std::max(d.max_share, p.sm_share);
    d.min_quota = std::min(d.min_quota, p.time_quota);
    d.max_quota = std::max(d.max_quota, p.time_quota);
  }
  return d;
}

// Linear interpolation of ys over ascending xs, constant beyond the ends.
double Interp(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (x <= xs.front())
    return ys.front();
  if (x >= xs.back())
    return ys.back();
  size_t i = std::upper_bound(xs.begin(), xs.end(), x) - xs.begin();
  double f = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
  return ys[i - 1] + f * (ys[i] - ys[i - 1]);
}

}  // namespace

absl::StatusOr<LatencyPredictor> LatencyPredictor::Train(std::span<const ProfilePoint> points,
                                                         const PredictorOptions& options) {
  absl::StatusOr<std::vector<ModelData>> models = Group(points);
  if (!models.ok())
    return models.status();
  LatencyPredictor lp;
  lp.options_ = options;
  lp.domain_ = DomainOf(points);
  for (const ProfilePoint& p : points) {
    if (std::find(lp.quotas_.begin(), lp.quotas_.end(), p.time_quota) == lp.quotas_.end())
      lp.quotas_.push_back(p.time_quota);
  }
  std::sort(lp.quotas_.begin(), lp.quotas_.end());
  std::vector<const ModelData*> usable;
  for (const ModelData& m : *models) {
    if (!PlanValues(m.latency).ok())
      continue;
    Curve c{m.name, {}};
    for (double q : lp.quotas_) {
      auto it = m.latency.find(KeyOf(1, 1.0, q));
      if (it == m.latency.end())
        break;
      c.log_latency.push_back(std::log(it->second));
    }
    if (c.log_latency.size() != lp.quotas_.size())
      continue;
    lp.curves_.push_back(std::move(c));
    usable.push_back(&m);
  }
  if (usable.size() < 2 || lp.quotas_.back() != 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "predictor training data: ", usable.size(),
        " models have every kProfilePlan configuration and L(batch 1, sm 1, q) at every quota "
        "of the grid ending at 1; need at least 2"));
  }
  lp.shape_ = LearnShape(usable);
  return lp;
}

absl::StatusOr<CalibratedPredictor> LatencyPredictor::Calibrate(
    std::span<const ProfilePoint> profile, const std::string& exclude) const {
  absl::StatusOr<std::vector<ModelData>> grouped = Group(profile);
  if (!grouped.ok())
    return grouped.status();
  absl::flat_hash_map<Key, double> latency;
  for (const ModelData& m : *grouped)
    latency.insert(m.latency.begin(), m.latency.end());
  absl::StatusOr<std::array<double, 6>> plan = PlanValues(latency);
  if (!plan.ok())
    return plan.status();
  CalibratedPredictor cp;
  cp.domain_ = domain_;
  cp.shape_ = shape_;
  cp.combine_r_ = options_.combine_r;
  cp.quotas_ = quotas_;
  SpatialFit sf = FitSpatialPlan(*plan, shape_);
  cp.a1_ = sf.a1, cp.a8_ = sf.a8, cp.k8_ = sf.k8;
  // Anchors of the quota curve: the plan's quotas at (1, 1) and q = 1.
  std::vector<double> aq = {kProfilePlan[3].time_quota, kProfilePlan[4].time_quota,
                            kProfilePlan[5].time_quota, 1.0};
  std::vector<double> al = {std::log((*plan)[3]), std::log((*plan)[4]), std::log((*plan)[5]),
                            std::log((*plan)[0])};
  std::vector<size_t> ai;
  for (double q : aq)
    ai.push_back(std::lower_bound(quotas_.begin(), quotas_.end(), q - 1e-9) - quotas_.begin());
  struct Cand {
    double dist, shift;
    const Curve* curve;
  };
  std::vector<Cand> cands;
  for (const Curve& c : curves_) {
    if (c.model == exclude)
      continue;
    double shift = 0, dist = 0;
    for (size_t i = 0; i < aq.size(); ++i)
      shift += (al[i] - c.log_latency[ai[i]]) / aq.size();
    for (size_t i = 0; i < aq.size(); ++i) {
      double d = al[i] - c.log_latency[ai[i]] - shift;
      dist += d * d;
    }
    cands.push_back({dist, shift, &c});
  }
  if (cands.empty())
    return absl::FailedPreconditionError("predictor has no training model to compare with");
  const size_t k = std::min<size_t>(std::max(options_.neighbours, 1), cands.size());
  std::partial_sort(cands.begin(), cands.begin() + k, cands.end(),
                    [](const Cand& a, const Cand& b) { return a.dist < b.dist; });
  std::vector<double> curve(quotas_.size(), 0.0);
  double wsum = 0;
  for (size_t j = 0; j < k; ++j) {
    double w = 1.0 / (cands[j].dist + 1e-3);
    wsum += w;
    for (size_t i = 0; i < quotas_.size(); ++i)
      curve[i] += w * (cands[j].curve->log_latency[i] + cands[j].shift);
  }
  std::vector<double> residual;
  for (size_t i = 0; i < aq.size(); ++i)
    residual.push_back(al[i] - curve[ai[i]] / wsum);
  const double t11 = (*plan)[0];
  cp.log_floor_.resize(quotas_.size());
  for (size_t i = 0; i < quotas_.size(); ++i) {
    double l = std::exp(curve[i] / wsum + Interp(aq, residual, quotas_[i]));
    double f = std::log(Sub(l, t11, options_.combine_r));
    cp.log_floor_[i] = i == 0 ? f : std::min(f, cp.log_floor_[i - 1]);  // non-increasing in q
  }
  return cp;
}

absl::StatusOr<double> CalibratedPredictor::Predict(int batch, double sm_share,
                                                    double time_quota) const {
  const PredictorDomain& d = domain_;
  if (batch < d.min_batch || batch > d.max_batch) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "batch %d is outside the predictor's data: allowed %d..%d", batch, d.min_batch,
        d.max_batch));
  }
  if (!(sm_share >= d.min_share - 1e-9 && sm_share <= d.max_share + 1e-9)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sm %g is outside the predictor's data: allowed %g..%g", sm_share, d.min_share,
        d.max_share));
  }
  if (!(time_quota >= d.min_quota - 1e-9 && time_quota <= d.max_quota + 1e-9)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "quota %g is outside the predictor's data: allowed %g..%g", time_quota, d.min_quota,
        d.max_quota));
  }
  return Seconds(batch, sm_share, time_quota);
}

double CalibratedPredictor::Spatial(int batch, double sm_share) const {
  return SpatialSeconds({a1_, a8_, k8_}, shape_, std::max(batch, 1), Clamp01(sm_share));
}

double CalibratedPredictor::Floor(double time_quota) const {
  const double q = Clamp01(time_quota);
  const double q_min = quotas_.front();
  if (q < q_min)
    return std::exp(log_floor_.front()) * q_min / q;
  return std::exp(Interp(quotas_, log_floor_, q));
}

double CalibratedPredictor::Seconds(int batch, double sm_share, double time_quota) const {
  const double t = Spatial(batch, sm_share);
  if (Clamp01(time_quota) >= 1.0)
    return t;
  return SmoothMax(t, Floor(time_quota), combine_r_);
}

absl::Duration PredictorLatencyModel::BatchLatency(int batch, double sm_share,
                                                   double time_quota) const {
  return absl::Seconds(predictor_.Seconds(batch, sm_share, time_quota));
}

absl::Duration PredictorLatencyModel::IterationTime(double sm_share) const {
  return absl::Seconds(3.0 * predictor_.Spatial(32, sm_share));
}

}  // namespace sluice::core
