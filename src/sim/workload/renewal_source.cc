// Poisson and Gamma renewal processes (MakeRenewalSource in sources.h).
#include <algorithm>
#include <cmath>
#include <optional>

#include "common/status.h"
#include "sim/workload/random.h"
#include "sim/workload/sources.h"

namespace sluice::sim {
namespace {

class RenewalSource final : public ArrivalSource {
 public:
  RenewalSource(RenewalKind kind, double rate_rps, double cv, uint64_t seed,
                const ReplayWindow& window)
      : kind_(kind), rate_(rate_rps), cv_(cv), window_(window), rng_(seed), end_(window.end()) {
    SLUICE_CHECK(rate_rps >= 0 && cv > 0);
    // Gamma with shape k has CV 1/sqrt(k); scale 1/(rate k) keeps the mean at 1/rate.
    shape_ = 1.0 / (cv * cv);
    if (rate_ > 0) {
      scale_ = 1.0 / (rate_ * shape_);
    }
    // The Poisson process is memoryless, so it can start at the offset instead of generating
    // and discarding the skipped prefix. A Gamma process is not, so it runs from 0.
    if (kind_ == RenewalKind::kExponential) {
      t_ = window_.offset_s;
    }
    done_ = rate_ <= 0;
  }

  std::optional<Arrival> Next() override {
    while (!done_) {
      t_ += kind_ == RenewalKind::kExponential ? rng_.Exponential(1.0 / rate_)
                                               : rng_.Gamma(shape_, scale_);
      if (t_ < window_.offset_s) {
        continue;
      }
      const absl::Time at = window_.ToTime(t_);
      if (at >= end_) {
        break;
      }
      return Arrival{.at = at};
    }
    done_ = true;
    return std::nullopt;
  }

  double MeanRate() const override { return rate_; }
  double InterArrivalCv() const override { return cv_; }

  std::optional<int64_t> DrawCount(absl::Time from, absl::Time to) override {
    from = std::max(from, window_.start);
    to = std::min(to, end_);
    if (rate_ <= 0 || to <= from)
      return 0;
    return DrawRenewalCount(rng_, rate_ * absl::ToDoubleSeconds(to - from),
                            kind_ == RenewalKind::kExponential ? 1.0 : cv_);
  }

 private:
  const RenewalKind kind_;
  const double rate_;
  const double cv_;
  const ReplayWindow window_;
  Rng rng_;
  const absl::Time end_;
  double shape_ = 1;
  double scale_ = 0;
  double t_ = 0;  // source seconds of the last arrival
  bool done_ = false;
};

}  // namespace

std::unique_ptr<ArrivalSource> MakeRenewalSource(RenewalKind kind, double rate_rps, double cv,
                                                 uint64_t seed, const ReplayWindow& window) {
  return std::make_unique<RenewalSource>(kind, rate_rps, cv, seed, window);
}

}  // namespace sluice::sim
