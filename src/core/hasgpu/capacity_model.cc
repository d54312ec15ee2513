// Capacity search. The grid of best configurations is filled on first use per cell, so a function
// that never scales horizontally never pays for it.
#include "core/hasgpu/capacity_model.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {

std::vector<double> StepGrid(double step) {
  std::vector<double> grid;
  for (int k = 1; k * step <= 1.0 + 1e-9; ++k)
    grid.push_back(std::min(1.0, std::round(k * step * 1e9) / 1e9));
  if (grid.empty() || grid.back() < 1.0 - 1e-9)
    grid.push_back(1.0);
  return grid;
}

CapacityModel::CapacityModel(const HasGpuFunction& f, const CapacityOptions& options)
    : f_(f), options_(options) {
  bound_ = f.slo == absl::InfiniteDuration() ? absl::InfiniteDuration()
                                             : f.slo * options.slo_fraction;
  const int max_batch = std::max(1, f.max_batch);
  for (int b = 1; b < max_batch; b *= 2)
    batches_.push_back(b);
  batches_.push_back(max_batch);
  partitions_ = StepGrid(options.sm_step);
  quotas_ = StepGrid(options.quota_step);
  grid_.resize(partitions_.size() * quotas_.size());
}

double CapacityModel::Capacity(int batch, double sm, double q) const {
  if (f_.latency == nullptr)
    return std::max(0.0, f_.fallback_rps_per_gpu * sm * q);
  const absl::Duration lat = f_.latency->BatchLatency(batch, sm, q);
  if (lat > bound_ || lat <= absl::ZeroDuration())
    return 0;
  return batch / absl::ToDoubleSeconds(lat);
}

PodConfig CapacityModel::Best(double sm, double q) const {
  PodConfig best{batches_.front(), sm, q, Capacity(batches_.front(), sm, q)};
  for (size_t i = 1; i < batches_.size(); ++i) {
    const double c = Capacity(batches_[i], sm, q);
    if (c > best.capacity * (1 + 1e-9)) {  // ties: the smaller batch (lower latency)
      best.batch = batches_[i];
      best.capacity = c;
    }
  }
  return best;
}

const PodConfig& CapacityModel::GridBest(size_t s, size_t q) const {
  std::optional<PodConfig>& cell = grid_[s * quotas_.size() + q];
  if (!cell)
    cell = Best(partitions_[s], quotas_[q]);
  return *cell;
}

namespace {

// Better for covering `need`: a covering config beats a non-covering one; among covering, the
// cheaper (then the larger); among non-covering, the larger (then the cheaper).
bool Covers(const PodConfig& c, double need) {
  return c.capacity >= need - 1e-9 * std::max(1.0, need);
}

bool Better(const PodConfig& a, const PodConfig& b, double need) {
  const bool ca = Covers(a, need), cb = Covers(b, need);
  if (ca != cb)
    return ca;
  if (ca) {
    if (std::abs(a.cost() - b.cost()) > 1e-12)
      return a.cost() < b.cost();
    return a.capacity > b.capacity * (1 + 1e-9);
  }
  if (std::abs(a.capacity - b.capacity) > 1e-9 * std::max(1.0, b.capacity))
    return a.capacity > b.capacity;
  return a.cost() < b.cost() - 1e-12;
}

}  // namespace

std::optional<PodConfig> CapacityModel::Cheapest(double need,
                                                 std::span<const PartitionRoom> rooms) const {
  std::optional<PodConfig> best;
  for (const PartitionRoom& room : rooms) {
    const auto on_grid = std::find_if(partitions_.begin(), partitions_.end(),
                                      [&](double s) { return std::abs(s - room.sm) <= 1e-6; });
    for (size_t qi = 0; qi < quotas_.size() && quotas_[qi] <= room.max_q + 1e-9; ++qi) {
      const PodConfig c =
          on_grid != partitions_.end()
              ? GridBest(static_cast<size_t>(on_grid - partitions_.begin()), qi)
              : Best(room.sm, quotas_[qi]);
      if (c.capacity > 0 && (!best || Better(c, *best, need)))
        best = c;
      if (Covers(c, need))
        break;  // larger q on this partition only costs more
    }
  }
  return best;
}

std::optional<PodConfig> CapacityModel::CheapestAnywhere(double need) const {
  std::vector<PartitionRoom> rooms;
  rooms.reserve(partitions_.size());
  for (double s : partitions_)
    rooms.push_back({s, 1.0});
  return Cheapest(need, rooms);
}

}  // namespace sluice::core
