#include "core/perf/perf_fit.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/perf/nelder_mead.h"

namespace sluice::core {
namespace {

// log(1 + exp(z)) without overflow.
double Softplus(double z) {
  return z > 30 ? z : std::log1p(std::exp(z));
}

// Parameter vector of FitSpatial: log t0, log t1, gamma, log s0, beta, log alpha, log p.
SpatialParams FromVector(std::span<const double> x) {
  return SpatialParams{std::exp(x[0]), std::exp(x[1]), x[2],          std::exp(x[3]),
                       x[4],           std::exp(x[5]), std::exp(x[6])};
}

double LogSpatial(const SpatialParams& sp, double log_b, double log_s) {
  double t_sat = sp.t0_s + sp.t1_s * std::exp(sp.gamma * log_b);
  double log_ratio = std::log(sp.s0) + sp.beta * log_b - log_s;
  return std::log(t_sat) + Softplus(sp.p * sp.alpha * log_ratio) / sp.p;
}

struct LogPoint {
  double log_b, log_s, log_t;
};

double SpatialObjective(std::span<const double> x, const std::vector<LogPoint>& pts) {
  if (x[2] < 0 || x[2] > 3 || x[4] < 0 || x[4] > 3 || x[6] < 0 || x[6] > std::log(20.0)) {
    return INFINITY;
  }
  SpatialParams sp = FromVector(x);
  double sum = 0;
  for (const LogPoint& p : pts) {
    double d = LogSpatial(sp, p.log_b, p.log_s) - p.log_t;
    sum += d * d;
  }
  return sum;
}

// A row usable by the quota fit, in logs.
struct QuotaRow {
  double log_base, log_ref, log_window_arg, log_t, t;  // window arg = 1/q - 1
};

std::vector<QuotaRow> QuotaRows(std::span<const ProfilePoint> points) {
  using Key = std::tuple<std::string, int, int>;  // model, batch, share in percent
  auto key = [](const ProfilePoint& p) {
    return Key{p.model, p.batch, static_cast<int>(std::lround(p.sm_share * 100))};
  };
  absl::flat_hash_map<Key, double> base;
  for (const ProfilePoint& p : points) {
    if (p.time_quota >= 1.0)
      base[key(p)] = p.latency_s;
  }
  std::vector<QuotaRow> rows;
  for (const ProfilePoint& p : points) {
    if (p.time_quota >= 1.0)
      continue;
    auto b = base.find(key(p));
    auto ref = base.find(Key{p.model, 1, 100});
    if (b == base.end() || ref == base.end())
      continue;
    rows.push_back({std::log(b->second), std::log(ref->second), std::log(1.0 / p.time_quota - 1.0),
                    std::log(p.latency_s), p.latency_s});
  }
  return rows;
}

QuotaParams QuotaFromVector(std::span<const double> x) {
  return QuotaParams{std::exp(x[0]), x[1], std::exp(x[2]), std::exp(x[3])};
}

// log of (t^r + w^r)^(1/r), w = omega * ref^delta * arg^eta.
double LogQuota(const QuotaParams& qp, const QuotaRow& row) {
  double log_w = std::log(qp.omega) + qp.delta * row.log_ref + qp.eta * row.log_window_arg;
  double m = std::max(row.log_base, log_w);
  return m + std::log(std::exp(qp.r * (row.log_base - m)) + std::exp(qp.r * (log_w - m))) / qp.r;
}

}  // namespace

void FitError::Add(double predicted, double measured) {
  const double ape = 100.0 * std::abs(predicted - measured) / measured;
  mape += ape;
  max_ape = std::max(max_ape, ape);
  ++points;
}

void FitError::Finish() {
  if (points > 0)
    mape /= points;
}

FitError MeasureFit(const LatencyModel& model, std::span<const ProfilePoint> points) {
  FitError e;
  for (const ProfilePoint& p : points) {
    double t = absl::ToDoubleSeconds(model.BatchLatency(p.batch, p.sm_share, p.time_quota));
    e.Add(t, p.latency_s);
  }
  e.Finish();
  return e;
}

absl::StatusOr<SpatialParams> FitSpatial(std::span<const ProfilePoint> points) {
  std::vector<LogPoint> pts;
  double t_lo = INFINITY, t_hi = 0;
  int b_hi = 1;
  for (const ProfilePoint& p : points) {
    if (p.time_quota < 1.0)
      continue;
    pts.push_back({std::log(p.batch), std::log(p.sm_share), std::log(p.latency_s)});
    t_lo = std::min(t_lo, p.latency_s);
    t_hi = std::max(t_hi, p.latency_s);
    b_hi = std::max(b_hi, p.batch);
  }
  if (pts.size() < 8)
    return absl::InvalidArgumentError("FitSpatial: fewer than 8 points");
  auto f = [&pts](std::span<const double> x) {
    return SpatialObjective(x, pts);
  };
  const std::vector<double> step = {0.3, 0.5, 0.2, 0.5, 0.2, 0.3, 0.3};
  NelderMeadResult best;
  best.value = INFINITY;
  for (double s0 : {0.05, 0.2, 0.6}) {
    for (double gamma : {0.6, 1.0}) {
      for (double alpha : {0.5, 1.0}) {
        std::vector<double> x0 = {std::log(0.8 * t_lo),
                                  std::log(std::max(t_hi / b_hi, 1e-6)),
                                  gamma,
                                  std::log(s0),
                                  0.5,
                                  std::log(alpha),
                                  std::log(4.0)};
        NelderMeadResult r = NelderMead(f, x0, step, {.max_evaluations = 6000});
        if (r.value < best.value)
          best = std::move(r);
      }
    }
  }
  return FromVector(best.x);
}

absl::StatusOr<QuotaFit> FitQuota(std::span<const ProfilePoint> points,
                                  std::optional<double> fixed_delta) {
  std::vector<QuotaRow> rows = QuotaRows(points);
  if (rows.size() < 8)
    return absl::InvalidArgumentError("FitQuota: fewer than 8 usable rows");
  auto f = [&rows, fixed_delta](std::span<const double> x) {
    if (x[1] < 0 || x[1] > 4 || x[3] > std::log(50.0))
      return double{INFINITY};
    QuotaParams qp = QuotaFromVector(x);
    if (fixed_delta)
      qp.delta = *fixed_delta;
    double sum = 0;
    for (const QuotaRow& row : rows) {
      double d = LogQuota(qp, row) - row.log_t;
      sum += d * d;
    }
    return sum;
  };
  std::vector<double> x0 = {std::log(1.0), fixed_delta.value_or(1.0), std::log(1.0), std::log(4.0)};
  // A zero step keeps a fixed delta out of the simplex.
  std::vector<double> step = {0.5, fixed_delta ? 0.0 : 0.3, 0.3, 0.5};
  NelderMeadResult r = NelderMead(f, x0, step, {.max_evaluations = 3000, .restarts = 2});
  QuotaFit fit;
  fit.params = QuotaFromVector(r.x);
  if (fixed_delta)
    fit.params.delta = *fixed_delta;
  fit.error = MeasureQuotaFit(fit.params, points);
  return fit;
}

FitError MeasureQuotaFit(const QuotaParams& params, std::span<const ProfilePoint> points) {
  FitError e;
  for (const QuotaRow& row : QuotaRows(points)) {
    e.Add(std::exp(LogQuota(params, row)), row.t);
  }
  e.Finish();
  return e;
}

absl::StatusOr<KappaFit> FitInterferenceKappa(std::span<const ProfilePoint> solo,
                                              std::span<const InterferencePoint> co) {
  using Key = std::tuple<std::string, int, int>;  // model, batch, share in percent
  absl::flat_hash_map<Key, double> alone;
  for (const ProfilePoint& p : solo) {
    alone[Key{p.model, p.batch, static_cast<int>(std::lround(p.sm_share * 100))}] = p.latency_s;
  }
  struct Match {
    double solo, co, share;
  };
  std::vector<Match> matches;
  KappaFit fit;
  for (const InterferencePoint& p : co) {
    auto it = alone.find(Key{p.model_a, p.batch_a, static_cast<int>(std::lround(p.share_a * 100))});
    if (it == alone.end()) {
      ++fit.unmatched;
      continue;
    }
    matches.push_back({it->second, p.latency_s, std::clamp(1.0 - p.share_a, 0.0, 1.0)});
  }
  if (matches.empty())
    return absl::NotFoundError("no co-located row has a solo measurement");
  double sxy = 0, sxx = 0, slow = 0;
  for (const Match& m : matches) {
    sxy += m.share * (m.co / m.solo - 1.0);
    sxx += m.share * m.share;
    slow += m.co / m.solo;
  }
  fit.kappa = sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
  fit.mean_slowdown = slow / matches.size();
  for (const Match& m : matches)
    fit.error.Add(m.solo * (1 + fit.kappa * m.share), m.co);
  fit.error.Finish();
  return fit;
}

absl::StatusOr<double> FitPrefillPerToken(std::span<const VidurLayerTime> rows, int layers,
                                          int min_tokens) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const VidurLayerTime& r : rows) {
    if (r.tensor_parallel != 1 || r.num_tokens < min_tokens)
      continue;
    double x = r.num_tokens, y = layers * r.layer_time_s;
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  double den = n * sxx - sx * sx;
  if (n < 2 || den <= 0) {
    return absl::InvalidArgumentError("FitPrefillPerToken: fewer than 2 distinct usable rows");
  }
  return (n * sxy - sx * sy) / den;
}

}  // namespace sluice::core
