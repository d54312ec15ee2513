// A small learned CV predictor in the shape of QUART §5.2 (Eq. 4-6), for the comparison with
// QNA propagation in cv_predictor_comparison_test.cc (docs/quart.md). Attention over the
// upstream stages j of the predicted stage: score_j = a . x_j + b d_j (x_j = [CV, utilisation,
// service CV, 1/sqrt(servers)], d_j = hops from the immediate upstream; Eq. 4's a^T[Wx_i||Wx_j]
// + theta CV_i reduces to this, since terms in i alone cancel in the softmax), value_j =
// w . phi(x_j) with phi the QNA basis [1, ca^2, rho^2, rho^2 ca^2, rho^2 cs^2/sqrt(c),
// rho^2/sqrt(c)] (so the model can represent QNA exactly), prediction = sqrt(sum_j alpha_j
// value_j). Fitted by least squares on the immediate upstream, then Adam on the squared CV error.
// Test-only. Thread-compatible.
#ifndef SLUICE_CORE_QUART_TESTING_ATTENTION_CV_PREDICTOR_H_
#define SLUICE_CORE_QUART_TESTING_ATTENTION_CV_PREDICTOR_H_

#include <array>
#include <vector>

namespace sluice::core::testing {

struct CvFeatures {
  double arrival_cv = 0;
  double utilisation = 0;
  double service_cv = 0;
  int servers = 1;
};

// Stages 0..i (in order; the last is the immediate upstream) and the CV measured at stage i + 1.
struct CvExample {
  std::vector<CvFeatures> upstream;
  double target_cv = 0;
};

class AttentionCvPredictor {
 public:
  void Fit(const std::vector<CvExample>& train, int steps, double learning_rate);
  double Predict(const std::vector<CvFeatures>& upstream) const;
  // Mean squared CV error over `data`.
  double Loss(const std::vector<CvExample>& data) const;

 private:
  static constexpr int kScore = 4, kValue = 6, kParams = kScore + 1 + kValue;
  // Prediction and, when `grad` is non-null, adds d(pred)/d(theta) x `scale` to it.
  double Forward(const std::vector<CvFeatures>& up, std::array<double, kParams>* grad,
                 double scale) const;
  void InitLeastSquares(const std::vector<CvExample>& train);

  std::array<double, kParams> theta_{};  // a (4), b, w (6)
};

}  // namespace sluice::core::testing

#endif  // SLUICE_CORE_QUART_TESTING_ATTENTION_CV_PREDICTOR_H_
