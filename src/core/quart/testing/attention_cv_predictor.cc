// The learned CV predictor (see attention_cv_predictor.h).
#include "core/quart/testing/attention_cv_predictor.h"

#include <algorithm>
#include <cmath>

namespace sluice::core::testing {
namespace {

constexpr double kFloor = 1e-6;

std::array<double, 4> ScoreFeatures(const CvFeatures& f) {
  return {f.arrival_cv, f.utilisation, f.service_cv, 1.0 / std::sqrt(std::max(1, f.servers))};
}

std::array<double, 6> Basis(const CvFeatures& f) {
  const double ca2 = f.arrival_cv * f.arrival_cv, r2 = f.utilisation * f.utilisation;
  const double inv = 1.0 / std::sqrt(std::max(1, f.servers));
  return {1.0, ca2, r2, r2 * ca2, r2 * f.service_cv * f.service_cv * inv, r2 * inv};
}

}  // namespace

double AttentionCvPredictor::Forward(const std::vector<CvFeatures>& up,
                                     std::array<double, kParams>* grad, double scale) const {
  const int n = static_cast<int>(up.size());
  std::vector<double> s(n), v(n);
  double top = -1e300;
  for (int j = 0; j < n; ++j) {
    const auto x = ScoreFeatures(up[j]);
    const auto phi = Basis(up[j]);
    s[j] = theta_[kScore] * (n - 1 - j);
    for (int k = 0; k < kScore; ++k)
      s[j] += theta_[k] * x[k];
    v[j] = 0;
    for (int k = 0; k < kValue; ++k)
      v[j] += theta_[kScore + 1 + k] * phi[k];
    top = std::max(top, s[j]);
  }
  double z = 0, p = 0;
  std::vector<double> alpha(n);
  for (int j = 0; j < n; ++j)
    z += alpha[j] = std::exp(s[j] - top);
  for (int j = 0; j < n; ++j)
    p += (alpha[j] /= z) * v[j];
  const double y = std::sqrt(std::max(p, kFloor));
  if (grad == nullptr || p <= kFloor)
    return y;
  const double dp = scale / (2 * y);  // d(loss)/d(p) given d(loss)/d(y) = scale
  for (int j = 0; j < n; ++j) {
    const auto x = ScoreFeatures(up[j]);
    const auto phi = Basis(up[j]);
    const double ds = dp * alpha[j] * (v[j] - p);
    for (int k = 0; k < kScore; ++k)
      (*grad)[k] += ds * x[k];
    (*grad)[kScore] += ds * (n - 1 - j);
    for (int k = 0; k < kValue; ++k)
      (*grad)[kScore + 1 + k] += dp * alpha[j] * phi[k];
  }
  return y;
}

void AttentionCvPredictor::InitLeastSquares(const std::vector<CvExample>& train) {
  // Normal equations for target^2 ~ w . phi(immediate upstream), with a small ridge.
  double m[kValue][kValue + 1] = {};
  for (const CvExample& e : train) {
    const auto phi = Basis(e.upstream.back());
    for (int r = 0; r < kValue; ++r) {
      for (int c = 0; c < kValue; ++c)
        m[r][c] += phi[r] * phi[c];
      m[r][kValue] += phi[r] * e.target_cv * e.target_cv;
    }
  }
  for (int r = 0; r < kValue; ++r)
    m[r][r] += 1e-6 * train.size();
  for (int c = 0; c < kValue; ++c) {  // Gauss-Jordan with partial pivoting
    int piv = c;
    for (int r = c + 1; r < kValue; ++r)
      piv = std::abs(m[r][c]) > std::abs(m[piv][c]) ? r : piv;
    std::swap(m[c], m[piv]);
    for (int r = 0; r < kValue; ++r) {
      if (r == c || m[c][c] == 0)
        continue;
      const double f = m[r][c] / m[c][c];
      for (int k = c; k <= kValue; ++k)
        m[r][k] -= f * m[c][k];
    }
  }
  theta_.fill(0);
  theta_[kScore] = -2;  // start attending mostly to the immediate upstream
  for (int k = 0; k < kValue; ++k)
    theta_[kScore + 1 + k] = m[k][k] != 0 ? m[k][kValue] / m[k][k] : 0;
}

void AttentionCvPredictor::Fit(const std::vector<CvExample>& train, int steps,
                               double learning_rate) {
  InitLeastSquares(train);
  std::array<double, kParams> m1{}, m2{};
  for (int t = 1; t <= steps; ++t) {
    std::array<double, kParams> g{};
    for (const CvExample& e : train) {
      const double y = Forward(e.upstream, nullptr, 0);
      Forward(e.upstream, &g, 2 * (y - e.target_cv) / train.size());
    }
    for (int k = 0; k < kParams; ++k) {  // Adam
      m1[k] = 0.9 * m1[k] + 0.1 * g[k];
      m2[k] = 0.999 * m2[k] + 0.001 * g[k] * g[k];
      const double mh = m1[k] / (1 - std::pow(0.9, t)), vh = m2[k] / (1 - std::pow(0.999, t));
      theta_[k] -= learning_rate * mh / (std::sqrt(vh) + 1e-8);
    }
  }
}

double AttentionCvPredictor::Predict(const std::vector<CvFeatures>& upstream) const {
  return Forward(upstream, nullptr, 0);
}

double AttentionCvPredictor::Loss(const std::vector<CvExample>& data) const {
  double sum = 0;
  for (const CvExample& e : data) {
    const double d = Predict(e.upstream) - e.target_cv;
    sum += d * d;
  }
  return data.empty() ? 0 : sum / data.size();
}

}  // namespace sluice::core::testing
