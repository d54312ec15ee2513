// Max-min fair flow network: flow bookkeeping, completions and queries. The recomputation of
// rates (component search and progressive filling) is in flow_network_fill.cc. Bytes and link
// totals are settled lazily (value at t_upd plus rate x elapsed), so advancing time costs nothing
// per flow; scratch vectors are members, so the steady state does not allocate.
#include "core/net/flow_network.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace sluice::core::net {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow is complete when less than this many bytes remain.
constexpr double kDoneBytes = 1.0;

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacity, absl::Time start)
    : start_(start), now_(start) {
  links_.resize(capacity.size());
  for (size_t i = 0; i < capacity.size(); ++i) {
    SLUICE_CHECK_MSG(capacity[i] > 0, "link capacity must be > 0");
    links_[i].capacity = capacity[i];
  }
}

double FlowNetwork::Sec(absl::Time t) const {
  return absl::ToDoubleSeconds(t - start_);
}

absl::Time FlowNetwork::TimeOf(double sec) const {
  // Beyond ~290 years of model time (a nearly stalled flow) the nanosecond count would overflow.
  if (!std::isfinite(sec) || sec > 9e9) {
    return absl::InfiniteFuture();
  }
  // Rounded up to the nanosecond so that advancing to the returned time completes the flow.
  return start_ + absl::Nanoseconds(static_cast<int64_t>(std::ceil(sec * 1e9)));
}

double FlowNetwork::RemainingAt(const FlowState& f, double t) const {
  if (f.rate <= 0) {
    return f.rem;
  }
  if (std::isinf(f.rate)) {
    return 0;
  }
  const double r = f.rem - f.rate * (t - f.t_upd);
  return r > 0 ? r : 0;
}

void FlowNetwork::SettleLink(LinkState& l, double t) {
  l.bytes += l.load * (t - l.t_upd);
  l.t_upd = t;
}

void FlowNetwork::Step(double t) {
  if (t > now_s_) {
    now_s_ = t;
  }
}

int FlowNetwork::AllocSlot() {
  if (!free_slots_.empty()) {
    const int slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  flows_.emplace_back();
  return static_cast<int>(flows_.size()) - 1;
}

FlowId FlowNetwork::Start(absl::Time now, const Path& path, int64_t bytes, double rate_cap,
                          uint64_t tag) {
  Step(Sec(now));
  if (now > now_) {
    now_ = now;
  }
  const int slot = AllocSlot();
  FlowState& f = flows_[slot];
  f.id = next_id_++;
  f.tag = tag;
  f.total = bytes > 0 ? static_cast<double>(bytes) : 0;
  f.rem = f.total;
  f.t_upd = now_s_;
  f.cap = std::isnan(rate_cap) ? kInf : std::max(0.0, rate_cap);
  f.rate = 0;
  f.live = true;
  f.frozen = true;  // outside a filling every flow is frozen at its rate
  f.path.assign(path.begin(), path.end());
  f.pos.resize(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    SLUICE_CHECK_MSG(path[i] >= 0 && path[i] < num_links(), "path names an unknown link");
    LinkState& l = links_[path[i]];
    f.pos[i] = static_cast<int>(l.flows.size());
    l.flows.push_back(slot);
  }
  slot_of_[f.id] = slot;
  if (path.empty()) {
    f.rate = f.cap;
    ++f.gen;
    PushDue(slot);
  } else {
    // Every flow gets at least min(cap, min over its links of capacity / flows): the new flow's
    // rate is no lower, so slower flows keep theirs.
    double floor = f.cap;
    for (int l : path) {
      floor = std::min(floor, links_[l].capacity / static_cast<double>(links_[l].flows.size()));
    }
    f.fresh = true;
    seed_links_.assign(path.begin(), path.end());
    Recompute(floor);
  }
  return f.id;
}

void FlowNetwork::Cancel(absl::Time now, FlowId id) {
  Step(Sec(now));
  if (now > now_) {
    now_ = now;
  }
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) {
    return;
  }
  seed_links_.clear();
  const double rate = flows_[it->second].rate;
  Detach(it->second);
  Recompute(rate);
}

// Unhooks a flow from its links (swap-remove, fixing the moved flow's back-pointer), frees its
// slot and adds its links to seed_links_ for the next Recompute.
void FlowNetwork::Detach(int slot) {
  FlowState& f = flows_[slot];
  for (size_t i = 0; i < f.path.size(); ++i) {
    const int link = f.path[i];
    LinkState& l = links_[link];
    const int p = f.pos[i];
    const int last_index = static_cast<int>(l.flows.size()) - 1;
    const int moved = l.flows[last_index];
    l.flows[p] = moved;
    l.flows.pop_back();
    if (p != last_index) {
      FlowState& m = flows_[moved];
      for (size_t j = 0; j < m.path.size(); ++j) {
        if (m.path[j] == link && m.pos[j] == last_index) {
          m.pos[j] = p;
          break;
        }
      }
    }
    seed_links_.push_back(link);
  }
  f.live = false;
  ++f.gen;
  slot_of_.erase(f.id);
  free_slots_.push_back(slot);
}

void FlowNetwork::PushDue(int slot) {
  const FlowState& f = flows_[slot];
  double t;
  if (f.rem <= 0 || std::isinf(f.rate)) {
    t = f.t_upd;
  } else if (f.rate > 0) {
    t = f.t_upd + f.rem / f.rate;
  } else {
    return;  // never completes under current rates
  }
  due_.push_back({t, slot, f.gen});
  std::push_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) {
    return a.t != b.t ? a.t > b.t : a.slot > b.slot;
  });
}

// Drops stale heap tops, and rebuilds the heap when stale entries dominate it.
void FlowNetwork::PopStale() {
  auto later = [](const Due& a, const Due& b) {
    return a.t != b.t ? a.t > b.t : a.slot > b.slot;
  };
  auto stale = [this](const Due& d) {
    const FlowState& f = flows_[d.slot];
    return !f.live || f.gen != d.gen;
  };
  if (due_.size() > 2 * slot_of_.size() + 1024) {
    due_.erase(std::remove_if(due_.begin(), due_.end(), stale), due_.end());
    std::make_heap(due_.begin(), due_.end(), later);
  }
  while (!due_.empty() && stale(due_.front())) {
    std::pop_heap(due_.begin(), due_.end(), later);
    due_.pop_back();
  }
}

// Completes every flow due at t (heap order), then recomputes once over their components.
void FlowNetwork::CompleteDue(double t, std::vector<FlowId>& out) {
  auto later = [](const Due& a, const Due& b) {
    return a.t != b.t ? a.t > b.t : a.slot > b.slot;
  };
  const size_t first = out.size();
  seed_links_.clear();
  double threshold = kInf;
  while (true) {
    PopStale();
    if (due_.empty()) {
      break;
    }
    const Due d = due_.front();
    const FlowState& f = flows_[d.slot];
    if (d.t > t && RemainingAt(f, t) >= kDoneBytes) {
      break;
    }
    std::pop_heap(due_.begin(), due_.end(), later);
    due_.pop_back();
    out.push_back(f.id);
    threshold = std::min(threshold, f.rate);
    Detach(d.slot);
  }
  // Heap order is (time, slot); completion order among simultaneous flows is by id.
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  Recompute(threshold);
}

std::vector<FlowId> FlowNetwork::AdvanceTo(absl::Time now) {
  std::vector<FlowId> done;
  const double target = std::max(now_s_, Sec(now));
  while (true) {
    PopStale();
    if (due_.empty()) {
      break;
    }
    const Due& d = due_.front();
    if (d.t > target && RemainingAt(flows_[d.slot], target) >= kDoneBytes) {
      break;
    }
    Step(std::min(d.t, target));
    CompleteDue(now_s_, done);
  }
  Step(target);
  if (now > now_) {
    now_ = now;
  }
  return done;
}

absl::Time FlowNetwork::NextCompletion() const {
  if (due_.empty()) {
    return absl::InfiniteFuture();
  }
  return std::max(now_, TimeOf(due_.front().t));
}

bool FlowNetwork::active(FlowId id) const {
  return slot_of_.contains(id);
}

uint64_t FlowNetwork::tag(FlowId id) const {
  auto it = slot_of_.find(id);
  return it == slot_of_.end() ? 0 : flows_[it->second].tag;
}

double FlowNetwork::rate(FlowId id) const {
  auto it = slot_of_.find(id);
  return it == slot_of_.end() ? 0 : flows_[it->second].rate;
}

double FlowNetwork::remaining(FlowId id) const {
  auto it = slot_of_.find(id);
  return it == slot_of_.end() ? 0 : RemainingAt(flows_[it->second], now_s_);
}

absl::Time FlowNetwork::TimeAtBytes(FlowId id, double bytes_done) const {
  auto it = slot_of_.find(id);
  if (it == slot_of_.end()) {
    return absl::InfiniteFuture();
  }
  const FlowState& f = flows_[it->second];
  const double done = f.total - RemainingAt(f, now_s_);
  if (bytes_done <= done) {
    return now_;
  }
  if (f.rate <= 0) {
    return absl::InfiniteFuture();
  }
  if (std::isinf(f.rate)) {
    return now_;
  }
  return std::max(now_, TimeOf(now_s_ + (bytes_done - done) / f.rate));
}

size_t FlowNetwork::num_active() const {
  return slot_of_.size();
}

double FlowNetwork::link_load(int link) const {
  return links_[link].load;
}

double FlowNetwork::link_bytes(int link) const {
  const LinkState& l = links_[link];
  return l.bytes + l.load * (now_s_ - l.t_upd);
}

}  // namespace sluice::core::net
