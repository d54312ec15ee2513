// HorizontalScaler: how many instances a function should have. One object per function.
// Implemented by the reactive keep-alive baseline (core/baselines) and Dilu's lazy scaler
// (core/dilu); driven by the simulator and the controller. Time comes in as an argument.
// Not thread-safe.
#ifndef SLUICE_CORE_POLICY_HORIZONTAL_H_
#define SLUICE_CORE_POLICY_HORIZONTAL_H_

#include <string_view>

#include "absl/time/time.h"

namespace sluice::core {

// One load observation, typically taken every second.
struct LoadSample {
  absl::Time at;
  double rps = 0;                        // arrivals per second over the last sampling interval
  int instances = 0;                     // deployed (warm or starting) instances
  double capacity_rps_per_instance = 0;  // profiled serving throughput of one instance
  int queued = 0;                        // requests waiting at the gateway
};

class HorizontalScaler {
 public:
  virtual ~HorizontalScaler() = default;
  virtual std::string_view name() const = 0;
  virtual void Observe(const LoadSample& sample) = 0;
  // Target number of instances at `now`, already clamped to the configured [min, max].
  virtual int Desired(absl::Time now) const = 0;
  // Next time Desired() may change without a new sample; InfiniteFuture when only samples
  // can change it (lets the simulator jump instead of ticking).
  virtual absl::Time NextWakeup() const { return absl::InfiniteFuture(); }
  // Memory-only idle (issue 13 item 4): of the Desired(now) instances, how many should hold an
  // SM share. The others stay resident in GPU memory but are "parked": the placement counts
  // their memory and not their SM share, the token server grants them no tokens, and the driver
  // un-parks one (its share back within one token period) when a request is routed to it.
  // The driver parks the longest-idle instances first. Default: every instance holds its share.
  virtual int ActiveWanted(absl::Time now) const { return Desired(now); }
  // Added (issue 13, event-driven idle functions): true when a sample at `now` with rps 0 and
  // nothing queued would change nothing (Observe a no-op for Desired, ActiveWanted and
  // NextWakeup), so a driver may skip such samples until the next arrival. Default: false.
  virtual bool QuietSampleIsNoOp(absl::Time now) const { return false; }
  // Added (issue 13, batched samples): a number k >= 0 such that the next k samples, taken every
  // `interval` after `now` with `instances` deployed and whatever load they carry, can change
  // neither Desired nor ActiveWanted at any of their times, nor move NextWakeup to a time within
  // (now, now + k x interval]. A driver may then hold those samples back and Observe them late,
  // in order, before it next reconciles: the decisions are the same. Default: 0 (no promise).
  virtual int SamplesWithoutDecision(absl::Time now, absl::Duration interval,
                                     int instances) const {
    return 0;
  }
  // The promise refined for a driver that knows each coming sample's load before it takes the
  // next (it draws them itself): sample j = 1, 2, ... (at most `samples`) changes neither Desired
  // nor ActiveWanted as long as, counting only the samples before it,
  //   - j <= quiet_first, or an earlier one was active (rps > 0 or queued > 0) at most quiet_run
  //     samples before j, and
  //   - fewer than `highs` were high (rps > high_above) and fewer than `lows` were low
  //     (rps < low_below, or rps <= 0 when low_when_zero).
  // No new wake-up falls among them, and a wake-up due among them from before finds, once the
  // samples before it are observed, nothing to change. Default: SamplesWithoutDecision's k with
  // no refinement.
  struct SamplePromise {
    static constexpr int kUnlimited = 1 << 30;
    int samples = 0;
    int quiet_first = 0;
    int quiet_run = 0;
    int highs = kUnlimited;
    double high_above = 0;
    int lows = kUnlimited;
    double low_below = 0;
    bool low_when_zero = false;

    // The rule above, for a driver walking a batch: NextAllowed() says whether sample taken() + 1
    // may join, Take(rps) records it once it has. Not thread-safe.
    class Cursor {
     public:
      explicit Cursor(const SamplePromise& p) : p_(p) {}
      int taken() const { return taken_; }
      bool NextAllowed() const {
        const int j = taken_ + 1;
        if (j > p_.samples || highs_ >= p_.highs || lows_ >= p_.lows)
          return false;
        return j <= p_.quiet_first || (last_active_ > 0 && j - last_active_ <= p_.quiet_run);
      }
      void Take(double rps) {
        ++taken_;
        last_active_ = rps > 0 ? taken_ : last_active_;
        highs_ += rps > p_.high_above ? 1 : 0;
        lows_ += rps < p_.low_below || (p_.low_when_zero && rps <= 0) ? 1 : 0;
      }

     private:
      const SamplePromise& p_;
      int taken_ = 0;
      int last_active_ = 0;
      int highs_ = 0;
      int lows_ = 0;
    };
  };
  virtual SamplePromise PromiseSamples(absl::Time now, absl::Duration interval,
                                       int instances) const {
    const int k = SamplesWithoutDecision(now, interval, instances);
    SamplePromise p;
    p.samples = k;
    p.quiet_first = k;
    return p;
  }
  // The same promise for quiet samples only (rps 0, nothing queued), which leave NextWakeup
  // where it is: k quiet samples, all before NextWakeup, that change neither Desired nor
  // ActiveWanted at their times. Default: 0.
  virtual int QuietSamplesWithoutDecision(absl::Time now, absl::Duration interval,
                                          int instances) const {
    return 0;
  }
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_POLICY_HORIZONTAL_H_
