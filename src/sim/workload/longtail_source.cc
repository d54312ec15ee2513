// The lazy source of one long-tail function (MakeLongTailSource in sources.h): a timer, or a
// Gamma renewal process in operational time mapped to source time through the diurnal rate
// curve. One arrival is computed per Next(); nothing is materialised.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "common/status.h"
#include "sim/workload/random.h"
#include "sim/workload/sources.h"

namespace sluice::sim {
namespace {

constexpr double kDay = 86400;

// Fires at phase + n x period source seconds.
class TimerSource final : public ArrivalSource {
 public:
  TimerSource(const LongTailArrivals& p, const ReplayWindow& window)
      : period_(absl::ToDoubleSeconds(p.timer_period)), window_(window), end_(window.end()) {
    const double phase = absl::ToDoubleSeconds(p.timer_phase);
    const double skip = std::ceil((window.offset_s - phase) / period_);
    t_ = phase + std::max(0.0, skip) * period_;
  }

  std::optional<Arrival> Next() override {
    const absl::Time at = window_.ToTime(t_);
    if (at >= end_)
      return std::nullopt;
    t_ += period_;
    return Arrival{.at = at};
  }

  double MeanRate() const override { return 1.0 / period_; }

 private:
  const double period_;
  const ReplayWindow window_;
  const absl::Time end_;
  double t_ = 0;  // source seconds of the next firing
};

// Source time t maps to operational time G(t) = t + (a / w)(sin(w (t - peak)) + sin(w peak)),
// w = 2 pi / day: G' = 1 + a cos(w (t - peak)) is the rate multiplier, G(0) = 0. Arrival n is at
// the t with G(t) = S_n, S_n the renewal epochs of mean gap 1 / rate.
class DiurnalRenewalSource final : public ArrivalSource {
 public:
  DiurnalRenewalSource(const LongTailArrivals& p, uint64_t seed, const ReplayWindow& window)
      : rate_(p.rate_rps), cv_(p.cv), amp_(p.diurnal_amplitude),
        peak_(absl::ToDoubleSeconds(p.diurnal_peak)), window_(window), rng_(seed),
        end_(window.end()), exponential_(std::abs(p.cv - 1.0) < 1e-12) {
    SLUICE_CHECK(p.rate_rps >= 0 && p.cv > 0 && amp_ >= 0 && amp_ < 1);
    sin_peak_ = std::sin(kW * peak_);
    shape_ = 1.0 / (p.cv * p.cv);
    if (rate_ > 0)
      scale_ = 1.0 / (rate_ * shape_);
    done_ = rate_ <= 0;
  }

  std::optional<Arrival> Next() override {
    while (!done_) {
      s_ += exponential_ ? rng_.Exponential(1.0 / rate_) : rng_.Gamma(shape_, scale_);
      t_ = Invert(s_);
      if (t_ < window_.offset_s)
        continue;
      const absl::Time at = window_.ToTime(t_);
      if (at >= end_)
        break;
      return Arrival{.at = at};
    }
    done_ = true;
    return std::nullopt;
  }

  double MeanRate() const override { return rate_; }
  double InterArrivalCv() const override { return cv_; }

  // Expected count = rate x (G(t1) - G(t0)) in source seconds (the diurnal curve's integral).
  std::optional<int64_t> DrawCount(absl::Time from, absl::Time to) override {
    from = std::max(from, window_.start);
    to = std::min(to, end_);
    if (rate_ <= 0 || to <= from)
      return 0;
    const double t0 = window_.offset_s + absl::ToDoubleSeconds(from - window_.start);
    const double t1 = t0 + absl::ToDoubleSeconds(to - from);
    // Windows come back to back: the last window's end is this one's start (same value, fewer
    // sines).
    const double g0 = t0 == g_at_ ? g_ : G(t0);
    g_at_ = t1;
    g_ = G(t1);
    return DrawRenewalCount(rng_, rate_ * (g_ - g0), exponential_ ? 1.0 : cv_);
  }

 private:
  static constexpr double kW = 2 * std::numbers::pi / kDay;
  double g_at_ = -1;  // G(g_at_) = g_: the end of the last DrawCount window
  double g_ = 0;

  double G(double t) const { return t + amp_ / kW * (std::sin(kW * (t - peak_)) + sin_peak_); }

  // The t >= t_ with G(t) = s: Newton's method kept inside the bracket that G's slope bounds
  // (1 - a <= G' <= 1 + a) give, bisecting when a step leaves it. Stops when G(t) is within
  // tol of s (t within 2 tol) or the bracket is 0.1 us wide. G(t_) is kept from the last call
  // (g_t_; the loop evaluates G at the t it returns, except after 100 steps).
  double Invert(double s) {
    if (amp_ == 0)
      return s;
    const double tol = 1e-9 + 1e-13 * std::abs(s);
    const double gap = s - (g_t_at_ == t_ ? g_t_ : G(t_));
    double lo = t_ + gap / (1 + amp_);
    double hi = t_ + gap / (1 - amp_);
    double t = t_ + gap;
    for (int i = 0; i < 100; ++i) {
      const double g = G(t);
      const double f = g - s;
      g_t_at_ = t;
      g_t_ = g;
      if (std::abs(f) < tol)
        break;
      (f > 0 ? hi : lo) = t;
      if (hi - lo < 1e-7)
        break;
      const double next = t - f / (1 + amp_ * std::cos(kW * (t - peak_)));
      t = next > lo && next < hi ? next : 0.5 * (lo + hi);
    }
    return std::max(t, t_);
  }

  const double rate_;
  const double cv_;
  const double amp_;
  const double peak_;
  const ReplayWindow window_;
  Rng rng_;
  const absl::Time end_;
  const bool exponential_;
  double shape_ = 1;
  double scale_ = 0;
  double sin_peak_ = 0;  // sin(kW peak_), a constant term of G
  double g_t_at_ = -1;   // G(g_t_at_) = g_t_: the last point Invert evaluated
  double g_t_ = 0;
  double s_ = 0;  // operational time of the last arrival
  double t_ = 0;  // source seconds of the last arrival
  bool done_ = false;
};

}  // namespace

std::unique_ptr<ArrivalSource> MakeLongTailSource(const LongTailArrivals& params, uint64_t seed,
                                                  const ReplayWindow& window) {
  if (params.trigger == AzureTrigger::kTimer && params.timer_period > absl::ZeroDuration())
    return std::make_unique<TimerSource>(params, window);
  return std::make_unique<DiurnalRenewalSource>(params, seed, window);
}

}  // namespace sluice::sim
