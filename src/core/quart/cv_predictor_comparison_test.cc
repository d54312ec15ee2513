// The issue asks: QUART §5.2 predicts each stage's arrival CV with a learned attention model;
// we use QNA propagation (cv_propagation.h) instead, so show on the same data that it predicts
// as well. Data: tandem G/G/c pipelines of 8 stages simulated request by request
// (testing/tandem_queue.h), entry CV in {0.1, 1, 2, 4, 8} x 4 seeded stage configurations
// (servers 1-4, utilisation 0.3-0.95, service CV 0.1-0.5), windows of 1,000 arrivals; each
// example predicts the CV at stage i + 1 from the windows of stages 0..i. Split by time: the
// first 70 % of each run's windows train the attention model (testing/attention_cv_predictor.h),
// the last 30 % test both. Printed table in docs/quart.md ("CV predictor: QNA vs attention").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "gtest/gtest.h"

#include "core/quart/cv_propagation.h"
#include "core/quart/mmc_model.h"
#include "core/quart/testing/attention_cv_predictor.h"
#include "core/quart/testing/tandem_queue.h"

namespace sluice::core {
namespace {

using testing::CvExample;
using testing::CvFeatures;

struct Data {
  std::vector<CvExample> train, test;
  std::vector<double> test_rate, test_mu;  // per test example: rate and per-server mu at i + 1
  std::vector<double> test_cs;
  std::vector<int> test_entry;  // index into kEntryCvs
};

constexpr double kEntryCvs[] = {0.1, 1, 2, 4, 8};
constexpr int kStages = 8, kConfigs = 4, kRequests = 40000, kWindow = 1000;

Data Build() {
  Data d;
  for (int e = 0; e < 5; ++e) {
    for (int cfg = 0; cfg < kConfigs; ++cfg) {
      std::mt19937_64 rng(1000 * e + cfg);
      std::uniform_real_distribution<double> u(0, 1);
      const double entry_rps = 100;
      std::vector<testing::TandemStage> stages(kStages);
      for (auto& s : stages) {
        s.servers = 1 + static_cast<int>(rng() % 4);
        s.service_rps = entry_rps / (s.servers * (0.3 + 0.65 * u(rng)));
        s.service_cv = 0.1 + 0.4 * u(rng);
      }
      const auto w = testing::SimulateTandem(stages, entry_rps, kEntryCvs[e], kRequests, kWindow,
                                             static_cast<uint64_t>(7919 * e + cfg));
      const int windows = static_cast<int>(w.back().size());
      for (int k = 0; k < windows; ++k) {
        for (int i = 0; i + 1 < kStages; ++i) {
          CvExample ex;
          for (int j = 0; j <= i; ++j) {
            ex.upstream.push_back(
                {w[j][k].arrival_cv, w[j][k].utilisation, stages[j].service_cv, stages[j].servers});
          }
          ex.target_cv = w[i + 1][k].arrival_cv;
          if (k < windows * 7 / 10) {
            d.train.push_back(std::move(ex));
            continue;
          }
          d.test.push_back(std::move(ex));
          d.test_rate.push_back(w[i + 1][k].rate);
          d.test_mu.push_back(stages[i + 1].service_rps);
          d.test_cs.push_back(stages[i + 1].service_cv);
          d.test_entry.push_back(e);
        }
      }
    }
  }
  return d;
}

double Qna(const std::vector<CvFeatures>& up) {
  const CvFeatures& f = up.back();
  return DepartureCv(f.arrival_cv, f.service_cv, f.utilisation, f.servers);
}

// Replicas QUART would size stage i + 1 with at this CV (target 3 service times).
int Replicas(const Data& d, size_t k, double cv) {
  return ReplicasForTarget(d.test_rate[k], d.test_mu[k], absl::Seconds(3.0 / d.test_mu[k]), 256, cv,
                           d.test_cs[k]);
}

TEST(CvPredictorComparison, QnaSizesTheSameReplicasAsTheLearnedAttentionModel) {
  const Data d = Build();
  ASSERT_GT(d.train.size(), 1000u);
  testing::AttentionCvPredictor att;
  att.Fit(d.train, 400, 0.02);
  double mae_qna[6] = {}, mae_att[6] = {}, mae_keep[6] = {};
  int n[6] = {}, agree_qna = 0, agree_att = 0, agree_both = 0;
  std::vector<double> diff;  // per test example: |QNA error| - |attention error|
  for (size_t k = 0; k < d.test.size(); ++k) {
    const CvExample& ex = d.test[k];
    const double q = Qna(ex.upstream), a = att.Predict(ex.upstream);
    const double keep = ex.upstream.back().arrival_cv;  // "CV does not change"
    for (int b : {d.test_entry[k], 5}) {
      mae_qna[b] += std::abs(q - ex.target_cv);
      mae_att[b] += std::abs(a - ex.target_cv);
      mae_keep[b] += std::abs(keep - ex.target_cv);
      ++n[b];
    }
    diff.push_back(std::abs(q - ex.target_cv) - std::abs(a - ex.target_cv));
    const int truth = Replicas(d, k, ex.target_cv);
    agree_qna += Replicas(d, k, q) == truth;
    agree_att += Replicas(d, k, a) == truth;
    agree_both += Replicas(d, k, q) == Replicas(d, k, a);
  }
  std::printf("| entry CV | test windows | MAE QNA | MAE attention | MAE persistence |\n");
  for (int b = 0; b < 6; ++b) {
    std::printf("| %s | %d | %.3f | %.3f | %.3f |\n",
                b < 5 ? std::to_string(kEntryCvs[b]).substr(0, 3).c_str() : "all", n[b],
                mae_qna[b] / n[b], mae_att[b] / n[b], mae_keep[b] / n[b]);
  }
  const double total = static_cast<double>(d.test.size());
  std::printf(
      "replicas equal to those sized with the measured CV: QNA %.1f %%, attention %.1f %%\n",
      100 * agree_qna / total, 100 * agree_att / total);
  std::printf("QNA and attention size the same replicas: %.1f %%\n", 100 * agree_both / total);
  std::printf("train MSE attention %.4f over %zu examples\n", att.Loss(d.train), d.train.size());
  // Paired bootstrap of the mean error difference (QNA - attention), 95 % interval.
  std::mt19937_64 rng(5);
  std::vector<double> means;
  for (int b = 0; b < 1000; ++b) {
    double sum = 0;
    for (size_t k = 0; k < diff.size(); ++k)
      sum += diff[rng() % diff.size()];
    means.push_back(sum / diff.size());
  }
  std::sort(means.begin(), means.end());
  std::printf("MAE(QNA) - MAE(attention): 95 %% interval [%.3f, %.3f]\n", means[25], means[974]);
  // What the data shows (docs/quart.md): on the raw CV the learned model is better (it shrinks
  // noisy window estimates toward the mean; the gap is at entry CV >= 2), but the replicas
  // QUART sizes from either agree with those sized from the measured CV equally often and with
  // each other on >= 95 % of windows; both are far better than assuming the CV does not change.
  EXPECT_LT(mae_qna[5], 0.9 * mae_keep[5]);
  EXPECT_LE(mae_qna[5], 1.3 * mae_att[5]);
  EXPECT_GE(agree_both, 0.95 * total);
  EXPECT_LE(std::abs(agree_qna - agree_att), 0.01 * total);
}

}  // namespace
}  // namespace sluice::core
