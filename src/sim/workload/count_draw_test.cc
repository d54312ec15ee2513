// Fluid mode's window counts (ArrivalSource::DrawCount, DrawRenewalCount, Rng::Poisson): over
// many seeded windows the count's mean is the window's expected arrivals and its variance
// cv^2 x mean, for Poisson, bursty (cv > 1) and regular (cv < 1) processes, with and without the
// diurnal curve.
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

#include "sim/workload/random.h"
#include "sim/workload/sources.h"

namespace sluice::sim {
namespace {

struct Moments {
  double mean = 0;
  double var = 0;
};

Moments Of(const std::vector<double>& xs) {
  Moments m;
  for (double x : xs) m.mean += x;
  m.mean /= static_cast<double>(xs.size());
  for (double x : xs) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(xs.size() - 1);
  return m;
}

TEST(CountDrawTest, PoissonHasItsMeanAsVariance) {
  for (double mean : {0.3, 4.0, 29.0, 31.0, 400.0}) {
    Rng rng(7);
    std::vector<double> xs;
    for (int i = 0; i < 40000; ++i) xs.push_back(static_cast<double>(rng.Poisson(mean)));
    const Moments m = Of(xs);
    EXPECT_NEAR(m.mean, mean, 4 * std::sqrt(mean / 40000) + 1e-3) << "mean " << mean;
    EXPECT_NEAR(m.var / mean, 1.0, 0.05) << "mean " << mean;
  }
}

TEST(CountDrawTest, RenewalCountVarianceIsCvSquaredTimesMean) {
  for (double cv : {0.5, 1.0, 2.0, 4.0}) {
    for (double mean : {2.0, 50.0}) {
      Rng rng(11);
      std::vector<double> xs;
      for (int i = 0; i < 40000; ++i) {
        xs.push_back(static_cast<double>(DrawRenewalCount(rng, mean, cv)));
      }
      const Moments m = Of(xs);
      EXPECT_NEAR(m.mean / mean, 1.0, 0.03) << "cv " << cv << " mean " << mean;
      // cv < 1 with a small mean: rounding and the floor at 0 add variance; allow for it.
      const double want = cv * cv * mean;
      EXPECT_NEAR(m.var / want, 1.0, cv < 1 && mean < 10 ? 0.2 : 0.06)
          << "cv " << cv << " mean " << mean;
    }
  }
}

TEST(CountDrawTest, SourcesDrawWindowCountsMatchingTheirRate) {
  const ReplayWindow window{absl::UnixEpoch(), 0, absl::Hours(24)};
  LongTailArrivals p;
  p.rate_rps = 10;
  p.cv = 2;
  p.diurnal_amplitude = 0;
  auto flat = MakeLongTailSource(p, 3, window);
  auto poisson = MakeRenewalSource(RenewalKind::kExponential, 10, 1, 3, window);
  for (ArrivalSource* s : {flat.get(), poisson.get()}) {
    std::vector<double> xs;
    for (int i = 0; i < 20000; ++i) {
      const absl::Time from = absl::UnixEpoch() + absl::Seconds(i);
      xs.push_back(static_cast<double>(*s->DrawCount(from, from + absl::Seconds(1))));
    }
    const Moments m = Of(xs);
    const double cv = s->InterArrivalCv();
    EXPECT_NEAR(m.mean, 10, 0.15);
    EXPECT_NEAR(m.var / (cv * cv * 10), 1.0, 0.06);
  }
}

TEST(CountDrawTest, DiurnalCountsFollowTheCurveAndOutsideTheWindowIsEmpty) {
  const ReplayWindow window{absl::UnixEpoch(), 0, absl::Hours(24)};
  LongTailArrivals p;
  p.rate_rps = 5;
  p.cv = 1;
  p.diurnal_amplitude = 0.5;
  p.diurnal_peak = absl::Hours(14);
  auto s = MakeLongTailSource(p, 5, window);
  double peak_hour = 0, trough_hour = 0, total = 0;
  for (int i = 0; i < 24 * 60; ++i) {
    const absl::Time from = absl::UnixEpoch() + absl::Minutes(i);
    const double n = static_cast<double>(*s->DrawCount(from, from + absl::Minutes(1)));
    total += n;
    if (i / 60 == 14) peak_hour += n;
    if (i / 60 == 2) trough_hour += n;
  }
  EXPECT_NEAR(total / (5 * 86400.0), 1.0, 0.01);  // the curve integrates to the mean rate
  EXPECT_NEAR(peak_hour / (5 * 3600 * 1.5), 1.0, 0.03);
  EXPECT_NEAR(trough_hour / (5 * 3600 * 0.5), 1.0, 0.05);
  EXPECT_EQ(*s->DrawCount(window.end(), window.end() + absl::Hours(1)), 0);
}

}  // namespace
}  // namespace sluice::sim
