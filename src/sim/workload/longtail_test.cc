// Long-tail fleets against the published Azure Functions 2019 statistics (Shahrad et al., ATC'20):
// Fig. 5(a)'s CDF points and the top-18.6 % share from the fitted rates and from generated
// arrivals, Fig. 3's trigger mix, timers' periodicity, the sources' CV and diurnal swing, and
// determinism.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"

#include "sim/workload/arrivals.h"
#include "sim/workload/longtail.h"
#include "sim/workload/testing/fixtures.h"

namespace sluice::sim {
namespace {

using testing::Drain;
using testing::Gaps;

const absl::Time kStart = absl::FromUnixSeconds(0);

std::vector<LongTailArrivals> Fleet(int n, uint64_t seed) {
  auto fleet = GenerateLongTailFleet(n, seed, LongTailFleetOptions{});
  EXPECT_TRUE(fleet.ok()) << fleet.status();
  return fleet.ok() ? *fleet : std::vector<LongTailArrivals>{};
}

std::unique_ptr<ArrivalSource> Source(const LongTailArrivals& f, uint64_t seed,
                                      absl::Duration horizon) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kLongTail;
  spec.longtail = f;
  auto s = MakeArrivalSource(spec, seed, kStart, horizon);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// Fig. 5(a): 45 % of functions at most once per hour, 81 % at most once per minute; the top
// 18.6 % carry 99.6 % of invocations. Stratified quantiles: within 1/N of the knots.
TEST(LongTailFleetTest, FittedRatesMatchFigure5a) {
  for (int n : {500, 5000, 50000}) {
    SCOPED_TRACE(n);
    const FleetStats s = ComputeFleetStats(Fleet(n, 11), 0.186);
    EXPECT_NEAR(s.at_most_hourly, 0.45, 1.5 / n + 1e-9);
    EXPECT_NEAR(s.at_most_per_minute, 0.81, 1.5 / n + 1e-9);
    // Tolerance: the share moves with the few largest draws in small fleets.
    EXPECT_NEAR(s.top_share, 0.996, n >= 5000 ? 0.0015 : 0.004);
  }
}

// The same CDF points from the arrivals themselves: each function's count over 24 h (counting
// stops at 1,441: only the thresholds matter). Tolerance 3 points: a function whose rate is near
// a threshold lands on either side by chance, and bursty (CV up to 8) functions more so.
TEST(LongTailFleetTest, GeneratedDayMatchesFigure5aWithinThreePoints) {
  const std::vector<LongTailArrivals> fleet = Fleet(3000, 5);
  int hourly = 0;
  int per_minute = 0;
  for (size_t i = 0; i < fleet.size(); ++i) {
    auto src = Source(fleet[i], DeriveSeed(9, i), absl::Hours(24));
    int count = 0;
    while (count <= 1440 && src->Next().has_value())
      ++count;
    hourly += count <= 24;
    per_minute += count <= 1440;
  }
  EXPECT_NEAR(hourly / 3000.0, 0.45, 0.03);
  EXPECT_NEAR(per_minute / 3000.0, 0.81, 0.03);
}

// Fig. 3: the share of functions per trigger, within 1 point on 50,000 functions; timers fire at
// most once a minute and carry under 2 % of invocations (the paper: 2.0 %).
TEST(LongTailFleetTest, TriggerMixMatchesFigure3) {
  const std::vector<LongTailArrivals> fleet = Fleet(50000, 3);
  std::vector<double> share(7, 0.0);
  double timer_rate = 0;
  double total_rate = 0;
  for (const LongTailArrivals& f : fleet) {
    share[static_cast<int>(f.trigger)] += 1.0 / fleet.size();
    total_rate += f.rate_rps;
    if (f.trigger == AzureTrigger::kTimer) {
      timer_rate += f.rate_rps;
      EXPECT_LE(f.rate_rps, 1.0 / 60 + 1e-12);
      EXPECT_GT(f.timer_period, absl::ZeroDuration());
    }
  }
  for (int t = 0; t < 7; ++t)
    EXPECT_NEAR(share[t], TriggerShares()[t], 0.01) << TriggerName(static_cast<AzureTrigger>(t));
  EXPECT_LT(timer_rate / total_rate, 0.02);
}

TEST(LongTailSourceTest, TimersArePeriodic) {
  LongTailArrivals t;
  t.trigger = AzureTrigger::kTimer;
  t.rate_rps = 1.0 / 300;
  t.timer_period = absl::Minutes(5);
  t.timer_phase = absl::Seconds(42);
  const std::vector<Arrival> a = Drain(*Source(t, 1, absl::Hours(1)));
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a[0].at, kStart + absl::Seconds(42));
  for (double g : Gaps(a))
    EXPECT_DOUBLE_EQ(g, 300);
}

TEST(LongTailSourceTest, RenewalCvAndRateAreAsConfigured) {
  for (double cv : {0.5, 1.0, 3.0}) {
    SCOPED_TRACE(cv);
    LongTailArrivals f;
    f.rate_rps = 20;
    f.cv = cv;
    const std::vector<double> gaps = Gaps(Drain(*Source(f, 7, absl::Hours(4))));
    double sum = 0, ss = 0;
    for (double g : gaps)
      sum += g;
    const double mean = sum / gaps.size();
    for (double g : gaps)
      ss += (g - mean) * (g - mean);
    EXPECT_NEAR(1 / mean, 20, 20 * 0.03);
    EXPECT_NEAR(std::sqrt(ss / (gaps.size() - 1)) / mean, cv, cv * 0.06);
  }
}

// Rate 5 x (1 + 0.5 cos(...)) peaking at 14:00: the hour around the peak holds 3x the hour
// around the trough (1.5 / 0.5; hour-averaged cosine: x 0.989), and a day averages to the rate.
TEST(LongTailSourceTest, DiurnalSwingFollowsTheCurve) {
  LongTailArrivals f;
  f.rate_rps = 5;
  f.diurnal_amplitude = 0.5;
  f.diurnal_peak = absl::Hours(14);
  const std::vector<Arrival> a = Drain(*Source(f, 3, absl::Hours(24)));
  auto count = [&](double from_h, double to_h) {
    return std::count_if(a.begin(), a.end(), [&](const Arrival& x) {
      const double h = absl::ToDoubleHours(x.at - kStart);
      return h >= from_h && h < to_h;
    });
  };
  const double peak = count(13.5, 14.5);
  const double trough = count(1.5, 2.5);
  EXPECT_NEAR(peak / 3600, 5 * (1 + 0.5 * 0.989), 5 * 1.5 * 0.05);
  EXPECT_NEAR(trough / 3600, 5 * (1 - 0.5 * 0.989), 5 * 0.5 * 0.08);
  EXPECT_NEAR(a.size() / 86400.0, 5, 5 * 0.02);
  for (size_t i = 1; i < a.size(); ++i)
    ASSERT_GE(a[i].at, a[i - 1].at);
}

TEST(LongTailFleetTest, SameSeedSameFleetAndArrivals) {
  const std::vector<LongTailArrivals> a = Fleet(200, 42);
  const std::vector<LongTailArrivals> b = Fleet(200, 42);
  const std::vector<LongTailArrivals> c = Fleet(200, 43);
  int differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].rate_rps, b[i].rate_rps);
    EXPECT_EQ(a[i].cv, b[i].cv);
    differ += a[i].rate_rps != c[i].rate_rps;
  }
  EXPECT_GT(differ, 190);
  const auto x = Drain(*Source(a.back(), 5, absl::Hours(8)));
  const auto y = Drain(*Source(b.back(), 5, absl::Hours(8)));
  ASSERT_EQ(x.size(), y.size());
  if (!x.empty()) {
    EXPECT_EQ(x.back().at, y.back().at);
  }
}

TEST(LongTailFleetTest, RejectsBadOptions) {
  EXPECT_FALSE(GenerateLongTailFleet(0, 1, {}).ok());
  LongTailFleetOptions o;
  o.max_diurnal_amplitude = 1;
  EXPECT_NE(GenerateLongTailFleet(5, 1, o).status().message().find("diurnal_amplitude"),
            std::string::npos);
  o = {};
  o.rate_scale = 0;
  EXPECT_NE(GenerateLongTailFleet(5, 1, o).status().message().find("rate_scale"),
            std::string::npos);
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kLongTail;
  spec.longtail.trigger = AzureTrigger::kTimer;
  EXPECT_NE(MakeArrivalSource(spec, 1, kStart, absl::Hours(1)).status().message().find(
                "timer_period"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::sim
