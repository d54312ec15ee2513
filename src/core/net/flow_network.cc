// Max-min fair flow network. Rates are recomputed only over the connected component (links
// joined by shared flows) that a start, cancel or completion touches: max-min allocations
// decompose over components, so the rest of the network keeps its rates. Progressive filling
// runs on a lazy min-heap of per-link fair levels (a level only rises as flows freeze), so one
// recomputation costs O((flows x path length + links) log links) over the component. Bytes and
// link totals are settled lazily (value at t_upd plus rate x elapsed), so advancing time costs
// nothing per flow. Scratch vectors are members, so the steady state does not allocate.
#include "core/net/flow_network.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace sluice::core::net {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow is complete when less than this many bytes remain.
constexpr double kDoneBytes = 1.0;

// Min-heap order on (level, link); a functor so that the heap operations inline it.
struct LevelLater {
  bool operator()(const std::pair<double, int>& a, const std::pair<double, int>& b) const {
    return a > b;
  }
};
constexpr LevelLater kLevelLater;

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacity, absl::Time start)
    : start_(start), now_(start) {
  links_.resize(capacity.size());
  for (size_t i = 0; i < capacity.size(); ++i) {
    SLUICE_CHECK_MSG(capacity[i] > 0, "link capacity must be > 0");
    links_[i].capacity = capacity[i];
  }
}

double FlowNetwork::Sec(absl::Time t) const { return absl::ToDoubleSeconds(t - start_); }

absl::Time FlowNetwork::TimeOf(double sec) const {
  if (!std::isfinite(sec)) {
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

// Breadth-first search from seed_links_ over link -> flows -> links, crossing only flows that
// may change (fresh, or rate >= threshold); slower flows are fixed and only reduce the residual
// capacity of the links they share with the search (their rate is unchanged: progressive
// filling below the level of the flow that came or went runs exactly as before).
void FlowNetwork::CollectComponent(double threshold) {
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  auto visit_link = [this](int l) {
    LinkState& ls = links_[l];
    if (ls.mark != epoch_) {
      ls.mark = epoch_;
      comp_links_.push_back(l);
    }
  };
  for (int l : seed_links_) {
    visit_link(l);
  }
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    LinkState& ls = links_[comp_links_[i]];
    ls.residual = ls.capacity;
    ls.fixed_load = 0;
    ls.unfrozen = 0;
    for (int slot : ls.flows) {
      FlowState& f = flows_[slot];
      if (!f.fresh && f.rate < threshold) {
        ls.residual -= f.rate;
        ls.fixed_load += f.rate;
        continue;
      }
      ++ls.unfrozen;
      if (f.mark == epoch_) {
        continue;
      }
      f.mark = epoch_;
      comp_flows_.push_back(slot);
      for (int l : f.path) {
        visit_link(l);
      }
    }
  }
  seed_links_.clear();
}

void FlowNetwork::Recompute(double threshold) {
  // Keep a safety margin below the exact threshold: recomputing a few more flows is harmless.
  CollectComponent(threshold * (1 - 1e-9));
  for (int l : comp_links_) {
    SettleLink(links_[l], now_s_);
  }
  FillComponent();
  for (int l : comp_links_) {
    links_[l].load = links_[l].fixed_load;
  }
  for (int slot : comp_flows_) {
    FlowState& f = flows_[slot];
    f.fresh = false;
    // A flow whose rate did not change keeps its byte account and its completion entry: in a
    // large component most rates survive a change elsewhere, and skipping them keeps the
    // completion heap small.
    if (std::abs(f.next_rate - f.rate) > 1e-12 * f.rate) {
      f.rem = RemainingAt(f, now_s_);
      f.t_upd = now_s_;
      f.rate = f.next_rate;
      ++f.gen;
      PushDue(slot);
    }
    for (int l : f.path) {
      links_[l].load += f.rate;
    }
  }
  PopStale();
}

// Progressive filling: all unfrozen flows share one rising level; the next event is either the
// lowest link fair level (residual / unfrozen crossings: that link saturates and freezes its
// flows) or the lowest rate cap (that flow freezes at its cap).
void FlowNetwork::FillComponent() {
  link_heap_.clear();
  for (int l : comp_links_) {
    const LinkState& ls = links_[l];
    if (ls.unfrozen > 0) {
      link_heap_.emplace_back(ls.residual / ls.unfrozen, l);
    }
  }
  std::make_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
  cap_order_.clear();
  for (int slot : comp_flows_) {
    FlowState& f = flows_[slot];
    f.frozen = false;
    if (std::isfinite(f.cap)) {
      cap_order_.emplace_back(f.cap, slot);
    }
  }
  std::sort(cap_order_.begin(), cap_order_.end());
  auto level_of = [this](int l) {
    const LinkState& ls = links_[l];
    return std::max(0.0, ls.residual) / ls.unfrozen;
  };
  // Freezing updates residuals; the links whose level changed are re-pushed once per round
  // (dirty_links_), not once per frozen flow.
  ++epoch_;
  auto freeze = [&](int slot, double rate) {
    FlowState& f = flows_[slot];
    f.frozen = true;
    f.next_rate = rate;
    for (int l : f.path) {
      LinkState& ls = links_[l];
      ls.residual -= rate;
      --ls.unfrozen;
      if (ls.mark != epoch_) {
        ls.mark = epoch_;
        dirty_links_.push_back(l);
      }
    }
  };
  auto push_dirty = [&]() {
    for (int l : dirty_links_) {
      if (links_[l].unfrozen > 0) {
        link_heap_.emplace_back(level_of(l), l);
        std::push_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
      }
    }
    dirty_links_.clear();
    ++epoch_;
  };
  size_t unfrozen = comp_flows_.size();
  size_t ci = 0;
  double floor = 0;  // levels only rise; guards against round-off dips
  while (unfrozen > 0) {
    while (!link_heap_.empty()) {
      const auto [level, l] = link_heap_.front();
      if (links_[l].unfrozen > 0 && level == level_of(l)) {
        break;
      }
      std::pop_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
      link_heap_.pop_back();
    }
    while (ci < cap_order_.size() && flows_[cap_order_[ci].second].frozen) {
      ++ci;
    }
    const double link_level =
        link_heap_.empty() ? kInf : std::max(floor, link_heap_.front().first);
    const double cap_level = ci < cap_order_.size() ? cap_order_[ci].first : kInf;
    if (link_heap_.empty() && ci >= cap_order_.size()) {
      break;  // unreachable: every component flow crosses a component link
    }
    if (cap_level <= link_level) {
      floor = std::max(floor, cap_level);
      freeze(cap_order_[ci].second, cap_level);
      --unfrozen;
      ++ci;
      push_dirty();
      continue;
    }
    const int l = link_heap_.front().second;
    floor = link_level;
    std::pop_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
    link_heap_.pop_back();
    for (size_t k = 0; k < links_[l].flows.size(); ++k) {
      const int slot = links_[l].flows[k];
      if (!flows_[slot].frozen) {
        freeze(slot, link_level);
        --unfrozen;
      }
    }
    push_dirty();
  }
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

bool FlowNetwork::active(FlowId id) const { return slot_of_.contains(id); }

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

size_t FlowNetwork::num_active() const { return slot_of_.size(); }

double FlowNetwork::link_load(int link) const { return links_[link].load; }

double FlowNetwork::link_bytes(int link) const {
  const LinkState& l = links_[link];
  return l.bytes + l.load * (now_s_ - l.t_upd);
}

}  // namespace sluice::core::net
