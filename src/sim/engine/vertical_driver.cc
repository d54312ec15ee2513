// Vertical controller ticks. The first tick of a GPU happens one period after it starts
// qualifying; a tick that finds no work in the period just ended and nobody busy stops the
// ticking (the next OnWorkStarted restarts it), which keeps the event count proportional to the
// busy co-located GPUs rather than to the cluster size.
#include "sim/engine/vertical_driver.h"

#include <cmath>
#include <utility>
#include <vector>

#include "common/status.h"
#include "core/longtail/parking.h"

namespace sluice::sim {
VerticalDriver::VerticalDriver(common::Env& env, core::PolicySet& policy, GpuShareModel& shares,
                               const core::ClusterState& cluster)
    : env_(env), policy_(policy), shares_(shares), cluster_(cluster), gpus_(cluster.gpu_count()) {}

void VerticalDriver::Register(int32_t instance, bool slo_sensitive, bool llm) {
  if (static_cast<size_t>(instance) >= flags_.size()) {
    flags_.resize(instance + 1, 0);
    cycles_.resize(instance + 1, 0);
    logged_cap_.resize(instance + 1, -1);
  }
  logged_cap_[instance] = -1;
  flags_[instance] = static_cast<uint8_t>((slo_sensitive ? 1 : 0) | (llm ? 2 : 0));
}

void VerticalDriver::OnWorkStarted(core::GpuId gpu) {
  GpuTicker& t = gpus_[gpu.value()];
  if (t.ticking || t.static_shares)
    return;
  if (shares_.unparked_count(gpu) < 2)
    return;
  if (t.controller == nullptr) {
    t.controller = policy_.MakeVerticalController(gpu);
    SLUICE_CHECK(t.controller != nullptr);
    if (t.controller->period() == absl::InfiniteDuration()) {
      t.static_shares = true;
      return;
    }
  }
  t.ticking = true;
  t.seen.clear();
  for (int32_t id : shares_.residents(gpu)) {
    shares_.TakeUsedShareSeconds(gpu, id);  // new window
    t.seen.emplace_back(id, cycles_[id]);
  }
  env_.RunAfter(t.controller->period(), [this, gpu] { Tick(gpu); });
}

void VerticalDriver::Tick(core::GpuId gpu) {
  GpuTicker& t = gpus_[gpu.value()];
  ++ticks_;
  const auto residents = shares_.residents(gpu);
  if (shares_.unparked_count(gpu) < 2) {
    StopTicking(gpu);
    return;
  }
  const int64_t max_tokens = cluster_.gpu(gpu).spec.sm_count * kBlocksPerSmPerPeriod;
  const bool any_work = Observe(gpu, t, residents, max_tokens);
  if (!any_work) {
    StopTicking(gpu);
    return;
  }
  tokens_.assign(activity_.size(), 0);
  t.controller->Issue(env_.Now(), max_tokens, activity_, tokens_);
  // Caps in residents order: a parked resident keeps its quota.limit.
  caps_.resize(residents.size());
  for (size_t k = 0, j = 0; k < residents.size(); ++k) {
    const bool split = j < active_.size() && active_[j] == k;
    caps_[k] = split ? static_cast<double>(tokens_[j++]) / static_cast<double>(max_tokens)
                     : shares_.quota(residents[k]).limit;
  }
  shares_.SetCaps(gpu, caps_);
  if (share_log_ != nullptr)
    ReportCaps(gpu, t, caps_, t.controller->state_name());
  env_.RunAfter(t.controller->period(), [this, gpu] { Tick(gpu); });
}

bool VerticalDriver::Observe(core::GpuId gpu, GpuTicker& t, std::span<const int32_t> residents,
                             int64_t max_tokens) {
  const double period_s = absl::ToDoubleSeconds(t.controller->period());
  activity_.clear();
  active_.clear();
  bool any_work = shares_.busy_count(gpu) > 0;
  for (size_t k = 0; k < residents.size(); ++k) {
    const int32_t id = residents[k];
    // Every resident's iteration count is read, as the token server reads every slot's.
    const int64_t cycles = TakeCycles(t, k, id);
    const core::SmQuota& quota = shares_.quota(id);
    if (core::IsParked(quota))
      continue;  // memory-only idle: no say in the split, no tokens, no history kept
    const double used = shares_.TakeUsedShareSeconds(gpu, id);
    any_work = any_work || used > 0;
    core::InstanceActivity a;
    a.instance = common::InstanceId(id);
    a.quota = quota;
    a.slo_sensitive = (flags_[id] & 1) != 0;
    a.llm = (flags_[id] & 2) != 0;
    a.blocks_launched = std::llround(used / period_s * static_cast<double>(max_tokens));
    a.cycles_completed = cycles;
    activity_.push_back(a);
    active_.push_back(k);
  }
  return any_work;
}

int64_t VerticalDriver::TakeCycles(GpuTicker& t, size_t k, int32_t instance) {
  const int64_t now = cycles_[instance];
  // `seen` is kept in residents order (both append on arrival and erase in place), so the entry
  // is almost always at the resident's own index; the scan is the fallback.
  if (k < t.seen.size() && t.seen[k].first == instance)
    return now - std::exchange(t.seen[k].second, now);
  for (auto& [id, seen] : t.seen) {
    if (id == instance)
      return now - std::exchange(seen, now);
  }
  t.seen.emplace_back(instance, now);  // joined while ticking: its ends so far are new
  return now;
}

void VerticalDriver::StopTicking(core::GpuId gpu) {
  GpuTicker& t = gpus_[gpu.value()];
  t.ticking = false;
  shares_.ResetCaps(gpu);
  if (share_log_ == nullptr)
    return;
  caps_.clear();
  for (int32_t id : shares_.residents(gpu))
    caps_.push_back(shares_.quota(id).limit);
  ReportCaps(gpu, t, caps_, t.logged_state);
}

void VerticalDriver::ReportCaps(core::GpuId gpu, GpuTicker& t, std::span<const double> caps,
                                std::string_view state) {
  const bool state_changed = state != t.logged_state;
  t.logged_state = state;
  const auto residents = shares_.residents(gpu);
  for (size_t k = 0; k < residents.size() && k < caps.size(); ++k) {
    const int32_t id = residents[k];
    if (core::IsParked(shares_.quota(id))) {
      logged_cap_[id] = -1;  // out of the split; reported afresh once un-parked
      continue;
    }
    const double before = logged_cap_[id] < 0 ? shares_.quota(id).limit : logged_cap_[id];
    if (!state_changed && std::abs(caps[k] - before) < kMaterialCapChange)
      continue;
    logged_cap_[id] = caps[k];
    share_log_(id, gpu, caps[k], state);
  }
}

void VerticalDriver::OnDetached(core::GpuId gpu, int32_t instance) {
  GpuTicker& t = gpus_[gpu.value()];
  std::erase_if(t.seen, [instance](const auto& e) { return e.first == instance; });
  if (t.controller != nullptr)
    t.controller->Forget(common::InstanceId(instance));
}

}  // namespace sluice::sim
