// Standard Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5), with restarts.
#include "core/perf/nelder_mead.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sluice::core {
namespace {

using Fn = std::function<double(std::span<const double>)>;

struct Simplex {
  std::vector<std::vector<double>> x;
  std::vector<double> fx;
};

// x = a + t * (a - b)
std::vector<double> Along(const std::vector<double>& a, const std::vector<double>& b, double t) {
  std::vector<double> r(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    r[i] = a[i] + t * (a[i] - b[i]);
  return r;
}

double Eval(const Fn& f, const std::vector<double>& x, int& evals) {
  ++evals;
  double v = f(x);
  return std::isnan(v) ? INFINITY : v;
}

void Sort(Simplex& s) {
  std::vector<size_t> idx(s.x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return s.fx[a] < s.fx[b]; });
  Simplex t;
  for (size_t i : idx) {
    t.x.push_back(std::move(s.x[i]));
    t.fx.push_back(s.fx[i]);
  }
  s = std::move(t);
}

// One Nelder-Mead iteration on a sorted simplex.
void Step(const Fn& f, Simplex& s, int& evals) {
  const size_t n = s.x.size() - 1;
  std::vector<double> centroid(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j)
      centroid[j] += s.x[i][j] / static_cast<double>(n);
  }
  std::vector<double> xr = Along(centroid, s.x[n], 1.0);
  double fr = Eval(f, xr, evals);
  if (fr < s.fx[0]) {
    std::vector<double> xe = Along(centroid, s.x[n], 2.0);
    double fe = Eval(f, xe, evals);
    if (fe < fr) {
      s.x[n] = std::move(xe), s.fx[n] = fe;
    } else {
      s.x[n] = std::move(xr), s.fx[n] = fr;
    }
    return;
  }
  if (fr < s.fx[n - 1]) {
    s.x[n] = std::move(xr), s.fx[n] = fr;
    return;
  }
  bool outside = fr < s.fx[n];
  std::vector<double> xc = Along(centroid, s.x[n], outside ? 0.5 : -0.5);
  double fc = Eval(f, xc, evals);
  if (fc < std::min(fr, s.fx[n])) {
    s.x[n] = std::move(xc), s.fx[n] = fc;
    return;
  }
  for (size_t i = 1; i <= n; ++i) {
    s.x[i] = Along(s.x[0], s.x[i], -0.5);
    s.fx[i] = Eval(f, s.x[i], evals);
  }
}

}  // namespace

NelderMeadResult NelderMead(const Fn& f, std::vector<double> x0, const std::vector<double>& step,
                            const NelderMeadOptions& options) {
  NelderMeadResult result;
  result.x = std::move(x0);
  result.value = Eval(f, result.x, result.evaluations);
  const size_t n = result.x.size();
  for (int round = 0; round <= options.restarts; ++round) {
    Simplex s;
    s.x.push_back(result.x);
    s.fx.push_back(result.value);
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> x = result.x;
      x[i] += step[i];
      s.fx.push_back(Eval(f, x, result.evaluations));
      s.x.push_back(std::move(x));
    }
    Sort(s);
    while (result.evaluations < options.max_evaluations &&
           std::abs(s.fx[n] - s.fx[0]) > options.tolerance * (1.0 + std::abs(s.fx[0]))) {
      Step(f, s, result.evaluations);
      Sort(s);
    }
    result.x = s.x[0];
    result.value = s.fx[0];
  }
  return result;
}

}  // namespace sluice::core
