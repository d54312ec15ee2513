// DiluVerticalController: Algorithm 2 over per-instance rate windows and KLC records, then a
// work-conserving pass. Shares are fractions of MaxTokens until the final rounding.
#include "core/dilu/vertical_controller.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {

absl::StatusOr<std::unique_ptr<DiluVerticalController>> DiluVerticalController::Create(
    const VerticalConfig& c) {
  const bool ok = c.period > absl::ZeroDuration() && c.eta_violation > 0 &&
                  c.eta_violation_llm > 0 && c.eta_increase >= 1 && c.eta_recover >= 0 &&
                  c.eta_recover <= std::min(c.eta_violation, c.eta_violation_llm) &&
                  c.recovery_every >= 1 && c.rate_window >= 1 && c.min_klc_periods >= 1 &&
                  c.klc_span_periods >= 1 && c.klc_min_window >= 0 &&
                  c.token_floor > 0 && c.token_floor <= 1;
  if (!ok)
    return absl::InvalidArgumentError("invalid vertical controller config");
  return std::unique_ptr<DiluVerticalController>(new DiluVerticalController(c));
}

void DiluVerticalController::Match(std::span<const InstanceActivity> instances) {
  bool same = slots_.size() == instances.size();
  for (size_t i = 0; same && i < instances.size(); ++i)
    same = slots_[i].id == instances[i].instance;
  if (!same) {
    std::vector<Slot> next;
    next.reserve(instances.size());
    for (const InstanceActivity& a : instances) {
      auto it = std::find_if(slots_.begin(), slots_.end(),
                             [&](const Slot& s) { return s.id == a.instance; });
      if (it != slots_.end()) {
        next.push_back(std::move(*it));
      } else {
        Slot s;
        s.id = a.instance;
        s.ring.assign(config_.rate_window, 0);
        next.push_back(std::move(s));
      }
    }
    slots_ = std::move(next);
  }
  if (state_ == GpuShareState::kEmergency &&
      std::none_of(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.id == owner_; })) {
    state_ = GpuShareState::kRecovery;  // the owner left: nobody else may keep EMERGENCY
    owner_ = InstanceId();
  }
}

void DiluVerticalController::Observe(Slot& s, const InstanceActivity& a) {
  const int64_t blocks = std::max<int64_t>(a.blocks_launched, 0);
  if (s.sum == 0 && blocks == 0 && a.cycles_completed == 0) {
    // Idle a whole window and still: RW stays all zeros and the busy clock stands, so only the
    // period count moves. T_min's slide and Delta T wait for the next period that reads them
    // (ObserveIterations; delta_t()): popping expired minima later pops the same ones, since no
    // KLC is recorded meanwhile. Most residents of a ticking GPU are idle.
    if (++s.pos == static_cast<int>(s.ring.size()))
      s.pos = 0;
    s.busy = false;
    ++s.periods;
    s.delta_stale = true;
    return;
  }
  s.sum += blocks - s.ring[s.pos];
  s.ring[s.pos] = blocks;
  if (++s.pos == static_cast<int>(s.ring.size()))
    s.pos = 0;
  s.busy = blocks > 0;
  ++s.periods;
  if (a.cycles_completed >= 0) {
    ObserveIterations(s, a.cycles_completed);
  } else {
    ObserveRuns(s);
  }
}

void DiluVerticalController::ObserveRuns(Slot& s) {
  if (s.busy) {
    ++s.run;
  } else if (s.run > 0) {  // a KLC just ended
    s.last_klc = s.run;
    if (s.run >= config_.min_klc_periods && (s.min_klc == 0 || s.run < s.min_klc)) {
      s.min_klc = s.run;
    }
    s.run = 0;
  }
  s.delta = 0;
  s.delta_stale = false;
  if (s.min_klc > 0) {
    const int current = s.run > 0 ? std::max(s.run, s.last_klc) : s.last_klc;
    s.delta = static_cast<double>(current - s.min_klc) / s.min_klc;
  }
}

void DiluVerticalController::ObserveIterations(Slot& s, int64_t cycles) {
  if (s.busy || cycles > 0)
    s.busy_clock += 1;
  if (cycles > 0) {
    s.ended += static_cast<double>(cycles);
    s.ends.push_back({s.busy_clock, s.ended});
    const double span = config_.klc_span_periods;
    while (s.ends.size() > 2 && s.busy_clock - s.ends[1].at >= span)
      s.ends.pop_front();
    const Slot::Mark& from = s.ends.front();
    if (s.ends.size() >= 2 && s.busy_clock - from.at >= span)  // shorter spans are too coarse
      RecordIterationKlc(s, (s.busy_clock - from.at) / (s.ended - from.value));
  }
  const double now = static_cast<double>(s.periods);
  while (config_.klc_min_window > 0 && s.mins.size() > 1 &&
         now - s.mins.front().at >= config_.klc_min_window) {
    s.mins.pop_front();  // T_min slides: the oldest minimum left the window
  }
  s.delta = IterationDelta(s);
  s.delta_stale = false;
}

double DiluVerticalController::IterationDelta(const Slot& s) const {
  const double now = static_cast<double>(s.periods);
  size_t first = 0;  // the first minimum still in the window (ObserveIterations pops the rest)
  while (config_.klc_min_window > 0 && s.mins.size() - first > 1 &&
         now - s.mins[first].at >= config_.klc_min_window) {
    ++first;
  }
  if (s.mins.empty())
    return 0;
  const double t_min = s.mins[first].value;
  const double ongoing = s.ends.empty() ? 0 : s.busy_clock - s.ends.back().at;
  return std::max(0.0, (std::max(s.klc, ongoing) - t_min) / t_min);
}

void DiluVerticalController::RecordIterationKlc(Slot& s, double klc) {
  s.klc = klc;
  const double now = static_cast<double>(s.periods);
  if (config_.klc_min_window == 0) {  // the paper's all-time minimum: keep just the minimum
    if (s.mins.empty() || klc < s.mins.front().value) {
      s.mins.clear();
      s.mins.push_back({now, klc});
    }
    return;
  }
  while (!s.mins.empty() && s.mins.back().value >= klc)
    s.mins.pop_back();
  s.mins.push_back({now, klc});
}

DiluVerticalController::Branch DiluVerticalController::EvalSlo(const Slot& s,
                                                               const InstanceActivity& a,
                                                               int64_t others_sum) const {
  const double eta = a.llm ? config_.eta_violation_llm : config_.eta_violation;
  const double last = s.last < 0 ? a.quota.request : s.last;
  if (s.sum == 0)
    return {GpuShareState::kRecovery, a.quota.request};
  if (s.delta > eta)
    return {GpuShareState::kEmergency, a.quota.limit};
  if (others_sum == 0) {
    return {GpuShareState::kRecovery, std::min(last * config_.eta_increase, a.quota.limit)};
  }
  if (s.delta < config_.eta_recover)
    return {GpuShareState::kRecovery, a.quota.request};
  return {GpuShareState::kContention, a.quota.request};
}

void DiluVerticalController::Decide(std::span<const InstanceActivity> instances) {
  int worst = -1;  // SLO instance with the largest Delta T among those proposing EMERGENCY
  bool any_slo = false, contention = false, owner_holds = false;
  for (size_t i = 0; i < instances.size(); ++i) {
    if (!instances[i].slo_sensitive)
      continue;
    any_slo = true;
    const GpuShareState p = branch_[i].state;
    if (slots_[i].id == owner_ && p == GpuShareState::kEmergency)
      owner_holds = true;
    if (p == GpuShareState::kContention)
      contention = true;
    if (p == GpuShareState::kEmergency && (worst < 0 || slots_[i].delta > slots_[worst].delta)) {
      worst = static_cast<int>(i);
    }
  }
  if (!any_slo) {
    state_ = GpuShareState::kNone;
    owner_ = InstanceId();
  } else if (state_ == GpuShareState::kEmergency && owner_holds) {
    // Only the owner may modify EMERGENCY: keep it, follow the owner's overflow.
  } else if (worst >= 0) {
    state_ = GpuShareState::kEmergency;
    owner_ = slots_[worst].id;
  } else {
    state_ = contention ? GpuShareState::kContention : GpuShareState::kRecovery;
    owner_ = InstanceId();
  }
  if (state_ == GpuShareState::kEmergency) {
    for (const Slot& s : slots_) {
      if (s.id == owner_)
        owner_overflow_ = 1 + s.delta;
    }
  }
  recovery_periods_ = state_ == GpuShareState::kRecovery ? recovery_periods_ + 1 : 0;
}

double DiluVerticalController::IssueBestEffort(const Slot& s, const InstanceActivity& a) const {
  const double last = s.last < 0 ? a.quota.request : s.last;
  switch (state_) {
    case GpuShareState::kNone:
      return a.quota.limit;
    case GpuShareState::kEmergency:
      return std::min(a.quota.request, last) / owner_overflow_;
    case GpuShareState::kRecovery:
      if (recovery_periods_ % config_.recovery_every == 0) {
        return std::min(last * config_.eta_increase, a.quota.limit);
      }
      return last;
    case GpuShareState::kContention:
      return last;
  }
  return last;
}

void DiluVerticalController::Conserve(std::span<const InstanceActivity> instances) {
  double pool = 1.0;
  for (size_t i = 0; i < instances.size(); ++i) {
    if (slots_[i].busy)
      pool -= share_[i];
  }
  for (int tier = 0; tier < 2 && pool > 1e-12; ++tier) {
    const bool slo_tier = tier == 0;
    if (!slo_tier && state_ == GpuShareState::kEmergency)
      break;
    for (size_t round = 0; round < instances.size() && pool > 1e-12; ++round) {
      double weight = 0;
      for (size_t i = 0; i < instances.size(); ++i) {
        const InstanceActivity& a = instances[i];
        if (slots_[i].busy && a.slo_sensitive == slo_tier && share_[i] < a.quota.limit) {
          weight += a.quota.request;
        }
      }
      if (weight <= 0)
        break;
      const double offer = pool;
      for (size_t i = 0; i < instances.size(); ++i) {
        const InstanceActivity& a = instances[i];
        if (!slots_[i].busy || a.slo_sensitive != slo_tier || share_[i] >= a.quota.limit)
          continue;
        const double give = std::min(offer * a.quota.request / weight, a.quota.limit - share_[i]);
        share_[i] += give;
        pool -= give;
      }
    }
  }
}

void DiluVerticalController::Issue(absl::Time now, int64_t max_tokens,
                                   std::span<const InstanceActivity> instances,
                                   std::span<int64_t> tokens_out) {
  Match(instances);
  const size_t n = instances.size();
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    Observe(slots_[i], instances[i]);
    total += slots_[i].sum;
  }
  branch_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (instances[i].slo_sensitive) {
      branch_[i] = EvalSlo(slots_[i], instances[i], total - slots_[i].sum);
    }
  }
  Decide(instances);
  share_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const InstanceActivity& a = instances[i];
    const double s = a.slo_sensitive ? branch_[i].share : IssueBestEffort(slots_[i], a);
    share_[i] = std::clamp(s, std::min(config_.token_floor, a.quota.limit), a.quota.limit);
    slots_[i].last = share_[i];
  }
  if (config_.work_conserving)
    Conserve(instances);
  const double floor_tokens = std::ceil(config_.token_floor * max_tokens);
  for (size_t i = 0; i < n; ++i) {
    const double t = std::max(floor_tokens, std::floor(share_[i] * max_tokens + 1e-9));
    tokens_out[i] = max_tokens > 0 ? static_cast<int64_t>(t) : 0;
  }
}

void DiluVerticalController::Forget(InstanceId instance) {
  slots_.erase(
      std::remove_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.id == instance; }),
      slots_.end());
  if (state_ == GpuShareState::kEmergency && owner_ == instance) {
    state_ = GpuShareState::kRecovery;
    owner_ = InstanceId();
  }
}

double DiluVerticalController::delta_t(InstanceId instance) const {
  for (const Slot& s : slots_) {
    if (s.id == instance)
      return s.delta_stale ? IterationDelta(s) : s.delta;
  }
  return 0;
}

void StaticRequestController::Issue(absl::Time now, int64_t max_tokens,
                                    std::span<const InstanceActivity> instances,
                                    std::span<int64_t> tokens_out) {
  const double floor_tokens = std::ceil(floor_ * max_tokens);
  for (size_t i = 0; i < instances.size(); ++i) {
    const double t = std::max(floor_tokens, std::floor(instances[i].quota.request * max_tokens));
    tokens_out[i] = max_tokens > 0 ? static_cast<int64_t>(t) : 0;
  }
}

std::string_view DiluVerticalController::state_name() const {
  switch (state_) {
    case GpuShareState::kEmergency:
      return "EMERGENCY";
    case GpuShareState::kRecovery:
      return "RECOVERY";
    case GpuShareState::kContention:
      return "CONTENTION";
    case GpuShareState::kNone:
      break;
  }
  return "NONE";
}

}  // namespace sluice::core
