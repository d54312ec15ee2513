// PriorityRateController: TGS-style priority time sharing (Wu et al., NSDI'23) as a
// VerticalController, for the "tgs" policy set (core/registry). The *production* (high-priority)
// instances of a GPU get every token they can use; the others are *opportunistic* and share an
// adaptive rate that probes upward while the production instance's kernel throughput holds and
// backs off when it drops (TGS's adaptive rate control, AIMD like TCP). One object per GPU;
// driven every period by the simulator / token server. Not thread-safe.
#ifndef SLUICE_CORE_BASELINES_PRIORITY_RATE_CONTROLLER_H_
#define SLUICE_CORE_BASELINES_PRIORITY_RATE_CONTROLLER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "core/policy/vertical.h"

namespace sluice::core {

struct PriorityRateConfig {
  absl::Duration period = absl::Milliseconds(5);
  // Opportunistic rate r: the fraction of the GPU's tokens the opportunistic instances share.
  double initial_rate = 0.05;   // r when a production instance (re)appears
  double floor = 0.01;          // r never goes below: opportunistic work never starves
  double increase_step = 0.01;  // additive increase per period without interference
  double backoff = 0.5;         // multiplicative decrease on interference
  // Interference: production blocks this period < (1 - tolerance) x reference, where the
  // reference is the production instance's recent peak, decaying by `reference_decay` per period
  // (so it follows a production load that settles lower).
  double tolerance = 0.05;
  double reference_decay = 0.01;
};

// Each period:
//   lead = the first SLO-sensitive instance in the given order (the longest-resident one, as
//     callers list instances in attach order), or the first instance when none is; production =
//     the lead and every other instance of the lead's function (replicas of a scaled-out
//     function; needs a FunctionLookup, else the lead alone); the rest are opportunistic;
//   signal p = production blocks launched in the period that just ended; o = the others';
//   if p > 0, o > 0 and p < (1 - tolerance) x ref:  r = max(floor, r x backoff)      [back off]
//   else if the opportunistic instances used at least (1 - tolerance) of the tokens they were
//     issued (they are rate-limited, not idle):   r = min(1, r + increase_step)      [probe]
//   ref = max(p, ref x (1 - reference_decay)).
// p == 0 means production was idle (in the fluid model a busy instance always runs), so it is no
// interference signal. Tokens: each production instance max_tokens; each of the n opportunistic
// ones max(1, floor(r x max_tokens / n)). A new lead resets r and ref.
class PriorityRateController : public VerticalController {
 public:
  // The function of an instance, nullopt when unknown.
  using FunctionLookup = std::function<std::optional<FunctionId>(InstanceId)>;

  // InvalidArgument unless period > 0 (finite), 0 < floor <= initial_rate <= 1,
  // increase_step >= 0, 0 < backoff < 1, 0 <= tolerance < 1, 0 <= reference_decay < 1.
  // `function_of` may be null (production = the lead alone); what it borrows must outlive the
  // controller.
  static absl::StatusOr<std::unique_ptr<PriorityRateController>> Create(
      const PriorityRateConfig& config, FunctionLookup function_of = nullptr);

  std::string_view name() const override { return "tgs"; }
  absl::Duration period() const override { return config_.period; }
  // Precondition: tokens_out.size() == instances.size().
  void Issue(absl::Time now, int64_t max_tokens, std::span<const InstanceActivity> instances,
             std::span<int64_t> tokens_out) override;
  void Forget(InstanceId instance) override;

  // Current opportunistic rate, production reference and lead (tests and traces).
  double rate() const { return rate_; }
  double reference() const { return reference_; }
  std::optional<InstanceId> production() const { return production_; }

 private:
  PriorityRateController(const PriorityRateConfig& config, FunctionLookup function_of)
      : config_(config), function_of_(std::move(function_of)), rate_(config.initial_rate) {}
  void Adapt(int64_t production_blocks, int64_t opportunistic_blocks);
  // Marks production instances in production_flags_; returns the lead's index.
  size_t SelectProduction(std::span<const InstanceActivity> instances);

  PriorityRateConfig config_;
  FunctionLookup function_of_;
  double rate_;
  double reference_ = 0;
  int64_t issued_opportunistic_ = 0;      // tokens given to opportunistic instances last period
  std::optional<InstanceId> production_;  // the lead
  std::vector<char> production_flags_;    // scratch, per instance of the current period
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_PRIORITY_RATE_CONTROLLER_H_
