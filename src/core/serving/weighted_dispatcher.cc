// Capacity-weighted least-outstanding dispatch. Instance counts per function are small (a few to
// tens), so a linear scan per pick is cheaper than keeping an ordered index up to date.
#include "core/serving/weighted_dispatcher.h"

#include <algorithm>

namespace sluice::core {

void WeightedDispatcher::Upsert(int64_t id, double capacity_rps, bool ready) {
  Instance& inst = instances_[id];
  inst.capacity_rps = capacity_rps > 0.0 ? capacity_rps : 0.0;
  inst.ready = ready;
}

bool WeightedDispatcher::Remove(int64_t id) {
  return instances_.erase(id) > 0;
}

double WeightedDispatcher::UnknownCapacity() const {
  double sum = 0.0;
  int known = 0;
  for (const auto& [id, inst] : instances_) {
    if (inst.capacity_rps > 0.0) {
      sum += inst.capacity_rps;
      ++known;
    }
  }
  return known == 0 ? 1.0 : sum / known;
}

double WeightedDispatcher::EffectiveCapacity(int64_t id) const {
  auto it = instances_.find(id);
  if (it == instances_.end())
    return 0.0;
  return it->second.capacity_rps > 0.0 ? it->second.capacity_rps : UnknownCapacity();
}

std::optional<int64_t> WeightedDispatcher::Pick(int max_in_flight,
                                                const std::vector<int64_t>& exclude) const {
  const double unknown = UnknownCapacity();
  std::optional<int64_t> best;
  double best_cost = 0.0;
  for (const auto& [id, inst] : instances_) {
    if (!inst.ready || (max_in_flight > 0 && inst.in_flight >= max_in_flight))
      continue;
    if (std::find(exclude.begin(), exclude.end(), id) != exclude.end())
      continue;
    const double cap = inst.capacity_rps > 0.0 ? inst.capacity_rps : unknown;
    const double cost = (inst.in_flight + 1) / cap;
    if (!best.has_value() || cost < best_cost) {  // strict: ties keep the lower id
      best = id;
      best_cost = cost;
    }
  }
  return best;
}

void WeightedDispatcher::OnDispatch(int64_t id) {
  auto it = instances_.find(id);
  if (it != instances_.end())
    ++it->second.in_flight;
}

void WeightedDispatcher::OnComplete(int64_t id) {
  auto it = instances_.find(id);
  if (it != instances_.end() && it->second.in_flight > 0)
    --it->second.in_flight;
}

double WeightedDispatcher::ReadyCapacity() const {
  const double unknown = UnknownCapacity();
  double sum = 0.0;
  for (const auto& [id, inst] : instances_) {
    if (inst.ready)
      sum += inst.capacity_rps > 0.0 ? inst.capacity_rps : unknown;
  }
  return sum;
}

int WeightedDispatcher::ready_count() const {
  int n = 0;
  for (const auto& [id, inst] : instances_)
    n += inst.ready ? 1 : 0;
  return n;
}

int WeightedDispatcher::in_flight(int64_t id) const {
  auto it = instances_.find(id);
  return it == instances_.end() ? 0 : it->second.in_flight;
}

}  // namespace sluice::core
