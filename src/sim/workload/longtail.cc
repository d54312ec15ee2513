// GenerateLongTailFleet and the fitted Azure Functions 2019 statistics (longtail.h).
#include "sim/workload/longtail.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"

#include "sim/workload/random.h"

namespace sluice::sim {
namespace {

// (quantile, invocations per day) knots of the Fig. 5(a) fit; log-linear in between.
struct Knot {
  double q;
  double per_day;
};
constexpr std::array<Knot, 4> kKnots = {{
    {0.0, 0.1},      // assumption: the rarest functions fire about once in ten days
    {0.45, 24.0},    // 45 % invoked at most once per hour on average
    {0.81, 1440.0},  // 81 % at most once per minute
    {1.0, 1.2e6},    // solved: the top 18.6 % carry 99.6 % of invocations
}};
constexpr double kSecondsPerDay = 86400;
constexpr double kTimerMaxQuantile = 0.81;  // timers fire at most once a minute
constexpr double kCvMedian = 1.0;
constexpr double kCvLogSigma = 0.8;
constexpr double kCvMin = 0.2;
constexpr double kCvMax = 8.0;
constexpr double kPeakJitterHours = 3.0;

constexpr std::array<double, 7> kTriggerShares = {
    0.550,  // kHttp
    0.156,  // kTimer
    0.152,  // kQueue
    0.069,  // kOrchestration
    0.028,  // kStorage
    0.022,  // kEvent
    0.023,  // kOthers (the figure's 2.2 %, rounded so that the shares sum to 1)
};

// A trigger for a function at popularity quantile q: timers only below kTimerMaxQuantile, with
// the probability that keeps their overall share; the rest in Fig. 3's proportions.
AzureTrigger DrawTrigger(double q, Rng& rng) {
  const double timer = kTriggerShares[1];
  if (q < kTimerMaxQuantile && rng.Uniform() < timer / kTimerMaxQuantile)
    return AzureTrigger::kTimer;
  double u = rng.Uniform() * (1.0 - timer);
  for (size_t i = 0; i < kTriggerShares.size(); ++i) {
    if (i == 1)
      continue;
    if (u < kTriggerShares[i])
      return static_cast<AzureTrigger>(i);
    u -= kTriggerShares[i];
  }
  return AzureTrigger::kOthers;
}

// Stratum of each function: a seeded Fisher-Yates permutation of 0..count-1.
std::vector<int> Strata(int count, uint64_t seed) {
  std::vector<int> p(count);
  std::iota(p.begin(), p.end(), 0);
  Rng rng(DeriveSeed(seed, 0xfeed));
  for (int i = count - 1; i > 0; --i) {
    const int j = static_cast<int>(rng.Uniform() * (i + 1));
    std::swap(p[i], p[std::min(j, i)]);
  }
  return p;
}

LongTailArrivals DrawFunction(double q, uint64_t seed, const LongTailFleetOptions& o) {
  Rng rng(seed);
  LongTailArrivals f;
  f.trigger = DrawTrigger(q, rng);
  f.rate_rps = DailyInvocationsAtQuantile(q) / kSecondsPerDay * o.rate_scale;
  if (f.trigger == AzureTrigger::kTimer) {
    f.timer_period = absl::Seconds(1.0 / f.rate_rps);
    f.timer_phase = f.timer_period * rng.Uniform();
    f.cv = 1.0;
    f.diurnal_amplitude = 0;
    return f;
  }
  const double cv = kCvMedian * std::exp(kCvLogSigma * rng.Normal());
  f.cv = std::clamp(cv, kCvMin, kCvMax);
  f.diurnal_amplitude = o.max_diurnal_amplitude * rng.Uniform();
  const double jitter_h = (2 * rng.Uniform() - 1) * kPeakJitterHours;
  f.diurnal_peak = o.diurnal_peak + absl::Hours(jitter_h);
  return f;
}

}  // namespace

double DailyInvocationsAtQuantile(double q) {
  q = std::clamp(q, 0.0, 1.0);
  for (size_t i = 1; i < kKnots.size(); ++i) {
    if (q <= kKnots[i].q) {
      const Knot& a = kKnots[i - 1];
      const Knot& b = kKnots[i];
      const double f = (q - a.q) / (b.q - a.q);
      return std::exp(std::log(a.per_day) + f * (std::log(b.per_day) - std::log(a.per_day)));
    }
  }
  return kKnots.back().per_day;
}

const std::array<double, 7>& TriggerShares() { return kTriggerShares; }

std::string_view TriggerName(AzureTrigger trigger) {
  switch (trigger) {
    case AzureTrigger::kHttp: return "http";
    case AzureTrigger::kTimer: return "timer";
    case AzureTrigger::kQueue: return "queue";
    case AzureTrigger::kOrchestration: return "orchestration";
    case AzureTrigger::kStorage: return "storage";
    case AzureTrigger::kEvent: return "event";
    case AzureTrigger::kOthers: return "others";
  }
  return "others";
}

absl::StatusOr<std::vector<LongTailArrivals>> GenerateLongTailFleet(
    int count, uint64_t seed, const LongTailFleetOptions& o) {
  if (count < 1)
    return absl::InvalidArgumentError(absl::StrCat("count must be >= 1, got ", count));
  if (!(o.rate_scale > 0) || !std::isfinite(o.rate_scale))
    return absl::InvalidArgumentError("rate_scale must be > 0");
  if (!(o.max_diurnal_amplitude >= 0 && o.max_diurnal_amplitude < 1))
    return absl::InvalidArgumentError("diurnal_amplitude must be in [0, 1)");
  const std::vector<int> strata = Strata(count, seed);
  std::vector<LongTailArrivals> fleet;
  fleet.reserve(count);
  for (int i = 0; i < count; ++i) {
    Rng rng(DeriveSeed(seed, 2 * static_cast<uint64_t>(i) + 1));
    const double q = (strata[i] + rng.Uniform()) / count;
    fleet.push_back(DrawFunction(q, DeriveSeed(seed, 2 * static_cast<uint64_t>(i) + 2), o));
  }
  return fleet;
}

FleetStats ComputeFleetStats(const std::vector<LongTailArrivals>& fleet, double top_fraction) {
  FleetStats s;
  if (fleet.empty())
    return s;
  std::vector<double> per_day;
  per_day.reserve(fleet.size());
  for (const LongTailArrivals& f : fleet)
    per_day.push_back(f.rate_rps * kSecondsPerDay);
  const double n = static_cast<double>(fleet.size());
  // A small relative slack so that a rate fitted exactly at a knot counts as "at most".
  s.at_most_hourly = std::count_if(per_day.begin(), per_day.end(),
                                   [](double d) { return d <= 24.0 * (1 + 1e-9); }) / n;
  s.at_most_per_minute = std::count_if(per_day.begin(), per_day.end(),
                                       [](double d) { return d <= 1440.0 * (1 + 1e-9); }) / n;
  std::sort(per_day.begin(), per_day.end(), std::greater<>());
  const size_t top = static_cast<size_t>(std::llround(top_fraction * n));
  const double total = std::accumulate(per_day.begin(), per_day.end(), 0.0);
  const double head = std::accumulate(per_day.begin(), per_day.begin() + top, 0.0);
  s.top_share = total > 0 ? head / total : 0;
  return s;
}

}  // namespace sluice::sim
