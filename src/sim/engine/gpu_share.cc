// Fluid GPU sharing. A work item's progress advances at rate = 1 / (SecondsAt(share, q) x
// InterferenceSlowdown(busy co-runners' SM-time, share x q)); a multi-GPU instance (model shards or
// data-parallel workers) advances at its slowest shard's rate. Rates are recomputed per GPU when
// its busy set or a cap changes, and an instance's completion timer moves only if its rate moved.
#include "sim/engine/gpu_share.h"

#include <algorithm>
#include <limits>

#include "common/status.h"
#include "core/longtail/parking.h"

namespace sluice::sim {
namespace {
constexpr double kEps = 1e-12;
constexpr double kMinSeconds = 1e-12;  // guards 1 / 0 for degenerate latency models

// Seconds via integer nanoseconds: exact to 1 ns, and far cheaper on this hot path than
// absl::ToDoubleSeconds (a 128-bit division).
double Secs(absl::Duration d) {
  return static_cast<double>(absl::ToInt64Nanoseconds(d)) * 1e-9;
}
}  // namespace

// Dividing by q == 1 is exact, so unsliced instances keep their latencies bit for bit.
double WorkItem::SecondsAt(double share, double time_quota) const {
  switch (kind) {
    case Kind::kBatch:
      return Secs(model->BatchLatency(batch, share, time_quota));
    case Kind::kLlmBatch:
      return Secs(model->PrefillLatency(prompt_tokens, share)) / time_quota +
             output_tokens * Secs(model->BatchLatency(batch, share, time_quota));
    case Kind::kIteration:
      return Secs(model->IterationTime(share)) / time_quota;
    case Kind::kFixed:
      return fixed_seconds;
  }
  return fixed_seconds;
}

void ComputeShares(std::span<const ShareDemand> busy, bool work_conserving,
                   std::span<double> shares) {
  const size_t n = busy.size();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    shares[i] = std::max(0.0, std::min(busy[i].request, busy[i].cap));
    sum += shares[i] * busy[i].time_quota;  // SM-time; x 1 is exact for unsliced instances
  }
  if (sum > 1.0) {
    for (size_t i = 0; i < n; ++i)
      shares[i] /= sum;
    return;
  }
  if (!work_conserving)
    return;
  double left = 1.0 - sum;
  // Water-filling: each round either exhausts `left` or saturates at least one instance.
  for (size_t round = 0; round < n && left > kEps; ++round) {
    double weight = 0;
    for (size_t i = 0; i < n; ++i) {
      if (shares[i] < busy[i].cap - kEps)
        weight += busy[i].request;
    }
    if (weight <= 0)
      break;
    double given = 0;
    for (size_t i = 0; i < n; ++i) {
      if (shares[i] >= busy[i].cap - kEps)
        continue;
      // The instance's part of the SM-time left, as a share (/ q: it runs a q-th of the time).
      const double q = busy[i].time_quota;
      const double add = std::min(left * busy[i].request / weight / q, busy[i].cap - shares[i]);
      shares[i] += add;
      given += add * q;
    }
    left -= given;
  }
}

GpuShareModel::GpuShareModel(common::Env& env, const core::PerfModel& perf, int gpu_count,
                             bool work_conserving, Listener& listener)
    : env_(env),
      perf_(perf),
      work_conserving_(work_conserving),
      listener_(listener),
      gpus_(gpu_count) {}

GpuShareModel::Shard& GpuShareModel::ShardOf(Member& m, int32_t gpu) {
  for (Shard& s : m.shards) {
    if (s.gpu == gpu)
      return s;
  }
  SLUICE_CHECK_MSG(false, "instance is not resident on this GPU");
  return m.shards.front();
}

double GpuShareModel::share(int32_t instance, core::GpuId gpu) const {
  for (const Shard& s : members_[instance].shards) {
    if (s.gpu == gpu.value())
      return s.share;
  }
  return 0;
}

void GpuShareModel::SetShare(Shard& s, double share, double q, absl::Time now) {
  s.used += s.share * q * Secs(now - s.used_since);
  s.used_since = now;
  s.share = share;
}

void GpuShareModel::Attach(int32_t instance, std::span<const core::GpuId> gpus,
                           const core::SmQuota& quota) {
  SLUICE_CHECK(instance >= 0);
  if (static_cast<size_t>(instance) >= members_.size())
    members_.resize(instance + 1);
  Member& m = members_[instance];
  SLUICE_CHECK(!m.attached);
  m.attached = true;
  m.busy = false;
  m.quota = quota;
  m.shards.clear();
  m.progress = 0;
  m.rate = 0;
  m.timer = 0;
  const absl::Time now = env_.Now();
  for (core::GpuId g : gpus) {
    Shard s;
    s.gpu = static_cast<int32_t>(g.value());
    s.cap = quota.limit;
    s.used_since = now;
    m.shards.push_back(s);
    gpus_[g.value()].residents.push_back(instance);
    gpus_[g.value()].parked += core::IsParked(quota) ? 1 : 0;
  }
}

void GpuShareModel::Detach(int32_t instance) {
  Member& m = members_[instance];
  SLUICE_CHECK(m.attached && !m.busy);
  const bool reshare = pending_reshare_ == instance;
  if (reshare)
    pending_reshare_ = -1;
  absl::InlinedVector<int32_t, 1> gpus;
  for (const Shard& s : m.shards) {
    auto& r = gpus_[s.gpu].residents;
    r.erase(std::find(r.begin(), r.end(), instance));
    gpus_[s.gpu].parked -= core::IsParked(m.quota) ? 1 : 0;
    gpus.push_back(s.gpu);
  }
  m.attached = false;
  m.shards.clear();
  if (!reshare)
    return;
  ++pass_;
  touched_.clear();
  for (int32_t g : gpus)
    ReshareGpu(g);
  ApplyRates();
}

void GpuShareModel::Start(int32_t instance, const WorkItem& work) {
  Member& m = members_[instance];
  SLUICE_CHECK(m.attached && !m.busy);
  if (pending_reshare_ == instance)
    pending_reshare_ = -1;
  m.busy = true;
  m.work = work;
  m.progress = 0;
  m.rate = 0;
  m.since = env_.Now();
  for (Shard& s : m.shards) {
    ++gpus_[s.gpu].busy;
    s.rate = -1;  // forces a fresh evaluation in ReshareGpu
  }
  Reshare(m);
}

void GpuShareModel::Reshare(const Member& m) {
  ++pass_;
  touched_.clear();
  for (const Shard& s : m.shards)
    ReshareGpu(s.gpu);
  ApplyRates();
}

void GpuShareModel::ReshareGpu(int32_t gpu) {
  demand_.clear();
  ids_.clear();
  for (int32_t id : gpus_[gpu].residents) {
    Member& r = members_[id];
    if (!r.busy)
      continue;
    ids_.push_back(id);
    demand_.push_back(ShareDemand{r.quota.request, ShardOf(r, gpu).cap, r.quota.time_quota});
  }
  shares_.resize(ids_.size());
  ComputeShares(demand_, work_conserving_, shares_);
  double total = 0;  // SM-time in use on the GPU
  for (size_t k = 0; k < ids_.size(); ++k)
    total += shares_[k] * demand_[k].time_quota;
  const absl::Time now = env_.Now();
  for (size_t k = 0; k < ids_.size(); ++k) {
    Member& r = members_[ids_[k]];
    Shard& s = ShardOf(r, gpu);
    const double share = shares_[k];
    const double q = demand_[k].time_quota;
    const double slow = perf_.InterferenceSlowdown(total - share * q);
    const bool fresh = s.rate < 0;  // a new work item: its latency is not known yet
    if (!fresh && share == s.share && slow == s.slow)
      continue;  // rate unchanged
    // The latency model is consulted only when the share moved; interference alone rescales.
    if (fresh || share != s.share)
      s.base_seconds = share > 0 ? r.work.SecondsAt(share, q) : 0;
    SetShare(s, share, q, now);
    s.slow = slow;
    s.rate = share > 0 ? 1.0 / std::max(kMinSeconds, s.base_seconds * slow) : 0;
    if (r.stamp != pass_) {
      r.stamp = pass_;
      touched_.push_back(ids_[k]);
    }
  }
}

void GpuShareModel::ApplyRates() {
  const absl::Time now = env_.Now();
  for (int32_t id : touched_) {
    Member& m = members_[id];
    if (!m.busy)
      continue;
    double rate = std::numeric_limits<double>::infinity();
    for (const Shard& s : m.shards)
      rate = std::min(rate, s.rate);
    if (rate == m.rate)
      continue;
    m.progress += m.rate * Secs(now - m.since);
    m.since = now;
    m.rate = rate;
    if (m.timer != 0)
      env_.Cancel(m.timer);
    m.timer = 0;
    if (rate <= 0)
      continue;
    const double left_s = std::max(0.0, 1.0 - m.progress) / rate;
    m.timer = env_.RunAt(now + absl::Seconds(left_s), [this, id] { Done(id); });
  }
}

void GpuShareModel::Done(int32_t instance) {
  const absl::Time now = env_.Now();
  {
    Member& m = members_[instance];
    m.timer = 0;
    m.busy = false;
    m.progress = 0;
    m.rate = 0;
    for (Shard& s : m.shards) {
      SetShare(s, 0, m.quota.time_quota, now);
      s.rate = 0;
      --gpus_[s.gpu].busy;
    }
  }
  pending_reshare_ = instance;
  listener_.OnWorkDone(instance);  // may Start() or Detach() it, or attach others
  if (pending_reshare_ != instance)
    return;
  pending_reshare_ = -1;
  Reshare(members_[instance]);
}

void GpuShareModel::SetQuota(int32_t instance, const core::SmQuota& quota) {
  Member& m = members_[instance];
  SLUICE_CHECK(m.attached);
  const absl::Time now = env_.Now();
  const int parked = (core::IsParked(quota) ? 1 : 0) - (core::IsParked(m.quota) ? 1 : 0);
  for (Shard& s : m.shards) {
    SetShare(s, s.share, m.quota.time_quota, now);  // SM-time so far at the old time quota
    gpus_[s.gpu].parked += parked;
    s.cap = quota.limit;
    if (m.busy)
      s.rate = -1;  // the latency at the new quota is not known yet
  }
  m.quota = quota;
  if (m.busy)
    Reshare(m);  // ApplyRates banks the progress made at the old rate first
}

void GpuShareModel::SetCaps(core::GpuId gpu, std::span<const double> caps) {
  const auto& residents = gpus_[gpu.value()].residents;
  SLUICE_CHECK(caps.size() == residents.size());
  bool moved = false;  // a busy resident's cap changed
  for (size_t k = 0; k < caps.size(); ++k) {
    Member& m = members_[residents[k]];
    Shard& s = ShardOf(m, static_cast<int32_t>(gpu.value()));
    const double cap = std::clamp(caps[k], 0.0, 1.0);
    moved = moved || (m.busy && cap != s.cap);
    s.cap = cap;
  }
  if (!moved)
    return;
  ++pass_;
  touched_.clear();
  ReshareGpu(static_cast<int32_t>(gpu.value()));
  ApplyRates();
}

void GpuShareModel::ResetCaps(core::GpuId gpu) {
  const auto& residents = gpus_[gpu.value()].residents;
  std::vector<double> caps;
  caps.reserve(residents.size());
  for (int32_t id : residents)
    caps.push_back(members_[id].quota.limit);
  SetCaps(gpu, caps);
}

double GpuShareModel::TakeUsedShareSeconds(core::GpuId gpu, int32_t instance) {
  Member& m = members_[instance];
  Shard& s = ShardOf(m, static_cast<int32_t>(gpu.value()));
  SetShare(s, s.share, m.quota.time_quota, env_.Now());
  const double used = s.used;
  s.used = 0;
  return used;
}

}  // namespace sluice::sim
