// DiluVerticalController: Dilu's fast scale-up/down token issuing (ASPLOS'25 §3.4.1, Algorithm 2,
// with the thresholds of its published RCKM server), one per GPU, called every period by the
// simulator and by the node agent's token server with the same inputs: per instance the kernel
// blocks launched in the period that just ended, its <request, limit> quota and SLO flag. Shares
// are kept as fractions of MaxTokens, so MaxTokens may change between calls. Not thread-safe.
#ifndef SLUICE_CORE_DILU_VERTICAL_CONTROLLER_H_
#define SLUICE_CORE_DILU_VERTICAL_CONTROLLER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "common/ring_queue.h"
#include "core/policy/vertical.h"

namespace sluice::core {

struct VerticalConfig {
  absl::Duration period = absl::Milliseconds(5);
  double eta_violation = 0.6;      // EMERGENCY when Delta T > this (RCKM overflow 1.6)
  double eta_violation_llm = 0.3;  // for LLM instances (overflow 1.3)
  double eta_increase = 1.3;       // RECOVERY growth factor
  double eta_recover = 0.2;        // Delta T below this lets best-effort recover (overflow 1.2)
  int recovery_every = 5;          // RECOVERY growth every this many periods
  int rate_window = 20;            // RW length in periods (100 ms at 5 ms)
  int min_klc_periods = 1;         // shorter KLCs are not recorded as T_min (run-based KLCs)
  int klc_span_periods = 10;       // iteration KLCs average over >= this much busy time
  int klc_min_window = 2000;       // T_min = min over this many periods (10 s); 0 = all time
  double token_floor = 0.01;       // minimum issue, fraction of MaxTokens
  bool work_conserving = true;
};

// GPU state. Transitions (each period, from the SLO-sensitive instances' branches a-e):
//   kNone -> kEmergency | kRecovery | kContention  an SLO instance is evaluated
//   any -> kNone                                   no SLO-sensitive instance on the GPU
//   kRecovery <-> kContention, either -> kEmergency  per branch
//   kEmergency -> kRecovery | kContention           only by the instance that raised it (the
//                                                   owner); kRecovery when the owner is gone
enum class GpuShareState { kNone, kEmergency, kRecovery, kContention };

// Per instance: a rate window RW of the last `rate_window` periods' block counts, and kernel
// launch cycles (KLC), measured one of two ways (Delta T = (T_cur - T_min) / T_min, 0 before any
// KLC is recorded):
// - Iteration boundaries known (InstanceActivity::cycles_completed >= 0), the paper's definition
//   (§3.4.1: the KLC within one iteration, a batch or a training step). Time is counted in busy
//   periods (periods with blocks or iteration ends), so idle gaps between batches do not count.
//   The c ends of a period are spread evenly over it, the last at its end; each period with ends
//   records a KLC = busy time / iterations between its last end and the most recent earlier
//   end at least klc_span_periods of busy time back (none is recorded until such an end
//   exists). An end's position is off by less than one period, so the relative error is below
//   1 / klc_span_periods; several iterations ending in one period give sub-period resolution.
//   T_min = the minimum recorded KLC over the last klc_min_window periods (the latest one when
//   none is that recent; 0 = the paper's all-time minimum): a batch-size change legitimately
//   changes the iteration time, and an all-time minimum would then read as contention for ever.
//   T_cur = the larger of the last recorded KLC and the busy time since the last end (an
//   iteration that runs on stretches T_cur while it lasts). min_klc_periods does not apply.
// - Unknown (-1): a KLC is a run of consecutive periods with blocks (what back-to-back work
//   merges into one endless cycle). T_min = the shortest completed KLC (at least
//   min_klc_periods long); T_cur = the ongoing run while it lasts, but never less than the last
//   completed KLC.
// SLO-sensitive instance, each period, first matching branch (Algorithm 2 lines 13-21):
//   a. sum RW[self] == 0 (idle a whole window)        -> RECOVERY, issue = request
//   b. Delta T > eta (0.6; 0.3 for LLMs)              -> EMERGENCY, issue = limit
//   c. sum RW[others] == 0 (co-runners idle)          -> RECOVERY, issue = min(last x eta_increase,
//                                                        limit)
//   d. Delta T < eta_recover (0.2, RCKM's overflow < 1.2) -> RECOVERY, issue = request
//   e. otherwise                                      -> CONTENTION, issue = request
// Branch a comes before b (unlike the paper's listing) so a stale stretched KLC cannot hold
// EMERGENCY while the instance sleeps; d is RCKM's recovery band, without which best-effort
// tokens squeezed by an EMERGENCY never grow back while the SLO instance stays busy.
// Best-effort instances, by GPU state (Algorithm 2 lines 23-31):
//   NONE: limit; EMERGENCY: min(request, last) / overflow, overflow = 1 + owner's Delta T (the
//   paper divides by Delta T, which would raise tokens for Delta T < 1; RCKM divides by the
//   overflow ratio); RECOVERY: min(last x eta_increase, limit) every recovery_every-th RECOVERY
//   period (RCKM: every 5th; 1 = the paper's every period), else last; CONTENTION: last.
// Every issue is at least token_floor (1 %) of MaxTokens and at most the limit.
// Work conservation (after Algorithm 2): capacity not claimed by the instances that launched
// blocks in the last period (MaxTokens minus their issues) flows to those busy instances up to
// their limits, in proportion to their requests, SLO-sensitive first and best-effort only outside
// EMERGENCY. Idle instances keep their own issue (a waking instance is not starved); "last" for
// the next period is the Algorithm-2 value, not the boosted one.
class DiluVerticalController final : public VerticalController {
 public:
  // InvalidArgument unless period > 0, etas > 0, eta_increase >= 1, 0 <= eta_recover <=
  // eta_violation(_llm), recovery_every >= 1, rate_window >= 1, min_klc_periods >= 1,
  // klc_span_periods >= 1, klc_min_window >= 0, 0 < token_floor <= 1.
  static absl::StatusOr<std::unique_ptr<DiluVerticalController>> Create(const VerticalConfig& c);

  std::string_view name() const override { return "dilu"; }
  absl::Duration period() const override { return config_.period; }
  void Issue(absl::Time now, int64_t max_tokens, std::span<const InstanceActivity> instances,
             std::span<int64_t> tokens_out) override;
  void Forget(InstanceId instance) override;

  GpuShareState state() const { return state_; }
  std::string_view state_name() const override;
  InstanceId emergency_owner() const { return owner_; }  // invalid unless kEmergency
  // Delta T of `instance` at the last Issue (0 if unknown).
  double delta_t(InstanceId instance) const;

 private:
  struct Slot {
    InstanceId id;
    std::vector<int64_t> ring;  // RW
    int pos = 0;
    int64_t sum = 0;
    int run = 0;        // ongoing KLC, periods
    int last_klc = 0;   // last completed KLC
    int min_klc = 0;    // T_min; 0 = none yet
    double last = -1;   // last Algorithm-2 issue (share); < 0 = new
    double delta = 0;   // Delta T this period, unless delta_stale
    // Idle periods skipped Delta T (Observe): it is IterationDelta's, and no branch reads it
    // (an idle slot takes branch a and cannot own or claim EMERGENCY).
    bool delta_stale = false;
    bool busy = false;  // launched blocks in the period that just ended
    // Iteration-boundary KLCs (cycles_completed >= 0); times in periods.
    struct Mark {
      double at;      // end: busy clock; minimum: period index
      double value;   // end: iterations ended so far; minimum: the KLC
    };
    int64_t periods = 0;      // Observe calls
    double busy_clock = 0;    // busy periods so far
    double ended = 0;         // iterations ended so far
    // Recorded ends, oldest first (only as far back as the span needs), and the sliding minimum
    // of recorded KLCs (increasing values). Ring buffers: no allocation until the first push
    // (std::deque allocates on construction, and slots come and go with residents).
    common::RingQueue<Mark> ends;
    common::RingQueue<Mark> mins;
    double klc = 0;           // last recorded iteration KLC; 0 = none
  };
  struct Branch {  // an SLO instance's proposal (branches a-e)
    GpuShareState state = GpuShareState::kNone;
    double share = 0;
  };
  explicit DiluVerticalController(const VerticalConfig& c) : config_(c) {}
  // Aligns slots_ with `instances` (new ones get fresh history, missing ones are dropped).
  void Match(std::span<const InstanceActivity> instances);
  void Observe(Slot& s, const InstanceActivity& a);  // shifts RW, updates KLCs and Delta T
  void ObserveRuns(Slot& s);                              // KLC = run of busy periods
  void ObserveIterations(Slot& s, int64_t cycles);        // KLC from iteration ends
  void RecordIterationKlc(Slot& s, double klc);           // updates the sliding T_min
  double IterationDelta(const Slot& s) const;  // Delta T from the KLC records, at s.periods
  Branch EvalSlo(const Slot& s, const InstanceActivity& a, int64_t others_sum) const;
  void Decide(std::span<const InstanceActivity> instances);  // GPU state from branch_
  double IssueBestEffort(const Slot& s, const InstanceActivity& a) const;
  void Conserve(std::span<const InstanceActivity> instances);  // adjusts share_

  VerticalConfig config_;
  std::vector<Slot> slots_;     // slots_[i] <-> instances[i] after Match
  std::vector<Branch> branch_;  // scratch, per instance
  std::vector<double> share_;   // scratch, per instance
  GpuShareState state_ = GpuShareState::kNone;
  InstanceId owner_;
  double owner_overflow_ = 1;
  int recovery_periods_ = 0;
};

// The "-VS" ablation: static tokens at each instance's request every period (floor as above).
class StaticRequestController final : public VerticalController {
 public:
  StaticRequestController(absl::Duration period, double token_floor)
      : period_(period), floor_(token_floor) {}
  std::string_view name() const override { return "dilu-static"; }
  absl::Duration period() const override { return period_; }
  void Issue(absl::Time now, int64_t max_tokens, std::span<const InstanceActivity> instances,
             std::span<int64_t> tokens_out) override;

 private:
  absl::Duration period_;
  double floor_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_VERTICAL_CONTROLLER_H_
