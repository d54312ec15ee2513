// Cost of the resource-aware predictor: one latency evaluation of a calibrated model (the
// simulator's per-batch call for `rapp/<model>` perf models and the autoscaler's RaPP(f, b, s, q)
// query), and one calibration of a new model from its six profiled points. Synthetic profiles of
// 60 models (the predictor's cost does not depend on the values).
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/perf/quota_predictor.h"

namespace sluice::core {
namespace {

std::vector<ProfilePoint> Models(int n) {
  std::vector<ProfilePoint> pts;
  for (int m = 0; m < n; ++m) {
    const std::string name = absl::StrCat("m", m);
    for (int b : {1, 2, 4, 8}) {
      for (int s = 5; s <= 100; s += 5) {
        for (int q = 10; q <= 100; q += 10) {
          double t = (0.01 + 0.001 * m) * std::pow(b, 0.2) * std::max(1.0, 0.3 * b / s * 10);
          double f = q < 100 ? 0.02 * (1 + m % 7) * std::pow(10.0 / q, 1.4) : 0;
          pts.push_back({name, b, s / 100.0, q / 100.0, std::max(t, f), 0});
        }
      }
    }
  }
  return pts;
}

std::vector<ProfilePoint> Plan(const std::vector<ProfilePoint>& all) {
  std::vector<ProfilePoint> out;
  for (const ProfilePoint& p : all) {
    for (const ProfileConfig& c : kProfilePlan) {
      if (p.model == "m3" && p.batch == c.batch && std::abs(p.sm_share - c.sm_share) < 1e-9 &&
          std::abs(p.time_quota - c.time_quota) < 1e-9)
        out.push_back(p);
    }
  }
  return out;
}

void BM_PredictorBatchLatency(benchmark::State& state) {
  std::vector<ProfilePoint> pts = Models(60);
  LatencyPredictor lp = *LatencyPredictor::Train(pts);
  PredictorLatencyModel m(*lp.Calibrate(Plan(pts)));
  int b = 1;
  double s = 0.05, q = 0.15;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.BatchLatency(b, s, q));
    b = b % 8 + 1;
    s = s >= 0.95 ? 0.05 : s + 0.05;
    q = q >= 0.95 ? 0.15 : q + 0.1;
  }
}
BENCHMARK(BM_PredictorBatchLatency);

void BM_PredictorCalibrate(benchmark::State& state) {
  std::vector<ProfilePoint> pts = Models(60);
  LatencyPredictor lp = *LatencyPredictor::Train(pts);
  std::vector<ProfilePoint> plan = Plan(pts);
  for (auto _ : state)
    benchmark::DoNotOptimize(lp.Calibrate(plan));
}
BENCHMARK(BM_PredictorCalibrate);

void BM_PredictorTrain(benchmark::State& state) {
  std::vector<ProfilePoint> pts = Models(60);
  for (auto _ : state)
    benchmark::DoNotOptimize(LatencyPredictor::Train(pts));
}
BENCHMARK(BM_PredictorTrain)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::core
