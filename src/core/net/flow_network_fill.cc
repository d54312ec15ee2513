// FlowNetwork's recomputation of rates. After a change, only flows that can change are
// revisited: the search crosses links from the changed flow's links through flows at or above a
// threshold rate (see CollectComponent), and max-min allocations decompose over what it finds.
// Progressive filling runs on a lazy min-heap of per-link fair levels (a link's level only rises
// as flows freeze), so one recomputation costs O((flows x path length + links) log links) over
// the flows it revisits.
#include <algorithm>
#include <cmath>

#include "core/net/flow_network.h"

namespace sluice::core::net {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Min-heap order on (level, link); a functor so that the heap operations inline it.
struct LevelLater {
  bool operator()(const std::pair<double, int>& a, const std::pair<double, int>& b) const {
    return a > b;
  }
};
constexpr LevelLater kLevelLater;

}  // namespace

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

void FlowNetwork::FillInit() {
  link_heap_.clear();
  for (int l : comp_links_) {
    if (links_[l].unfrozen > 0) {
      link_heap_.emplace_back(LevelOf(l), l);
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
  dirty_links_.clear();
  ++epoch_;
}

double FlowNetwork::LevelOf(int link) const {
  const LinkState& ls = links_[link];
  return std::max(0.0, ls.residual) / ls.unfrozen;
}

// Freezing updates residuals; the links whose level changed are re-pushed once per round
// (PushDirty), not once per frozen flow.
void FlowNetwork::Freeze(int slot, double rate) {
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
}

void FlowNetwork::PushDirty() {
  for (int l : dirty_links_) {
    if (links_[l].unfrozen > 0) {
      link_heap_.emplace_back(LevelOf(l), l);
      std::push_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
    }
  }
  dirty_links_.clear();
  ++epoch_;
}

// The link with the lowest current fair level, dropping stale heap entries; -1 when none.
int FlowNetwork::LowestLink() {
  while (!link_heap_.empty()) {
    const auto [level, l] = link_heap_.front();
    if (links_[l].unfrozen > 0 && level == LevelOf(l)) {
      return l;
    }
    std::pop_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
    link_heap_.pop_back();
  }
  return -1;
}

// Progressive filling: all unfrozen flows share one rising level; the next event is either the
// lowest link fair level (residual / unfrozen crossings: that link saturates and freezes its
// flows) or the lowest rate cap (that flow freezes at its cap).
void FlowNetwork::FillComponent() {
  FillInit();
  size_t ci = 0;
  double floor = 0;  // levels only rise; guards against round-off dips
  while (true) {
    const int l = LowestLink();
    while (ci < cap_order_.size() && flows_[cap_order_[ci].second].frozen) {
      ++ci;
    }
    if (l < 0 && ci >= cap_order_.size()) {
      break;  // every flow is frozen
    }
    const double link_level = l < 0 ? kInf : std::max(floor, link_heap_.front().first);
    const double cap_level = ci < cap_order_.size() ? cap_order_[ci].first : kInf;
    if (cap_level <= link_level) {
      floor = std::max(floor, cap_level);
      Freeze(cap_order_[ci++].second, cap_level);
    } else {
      floor = link_level;
      std::pop_heap(link_heap_.begin(), link_heap_.end(), kLevelLater);
      link_heap_.pop_back();
      for (size_t k = 0; k < links_[l].flows.size(); ++k) {
        if (!flows_[links_[l].flows[k]].frozen) {
          Freeze(links_[l].flows[k], link_level);
        }
      }
    }
    PushDirty();
  }
}

}  // namespace sluice::core::net
