// Fragmentation measures. Share comparisons allow 1e-9 of slack because per-GPU sums are built
// by repeated floating-point addition.
#include "core/resource/fragmentation.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice::core {
namespace {

constexpr double kShareEps = 1e-9;

double Unallocated(const GpuState& g) {
  return std::max(0.0, 1.0 - GuaranteedSmTime(g));
}

// What FGD needs to know about one GPU.
struct GpuRoom {
  double free_share;
  Bytes free_memory;
};

double TotalWeight(const TargetWorkload& w) {
  double total = 0;
  for (const TaskClass& t : w.tasks)
    total += t.weight;
  return total;
}

// F_n(M) for a node given its GPUs' free room (see the header for the definition).
double FgdOfRooms(std::span<const GpuRoom> rooms, const TargetWorkload& w, double total_weight) {
  double all_free = 0;
  for (const GpuRoom& r : rooms)
    all_free += r.free_share;
  double expected = 0;
  for (const TaskClass& t : w.tasks) {
    if (t.weight <= 0)
      continue;
    int usable = 0;
    double unusable_free = 0;
    for (const GpuRoom& r : rooms) {
      if (r.free_share + kShareEps >= t.share * t.time_quota && r.free_memory >= t.memory) {
        ++usable;
      } else {
        unusable_free += r.free_share;
      }
    }
    const bool hostable = t.gpus >= 1 && usable >= t.gpus;
    expected += (t.weight / total_weight) * (hostable ? unusable_free : all_free);
  }
  return expected;
}

// Fragments of idle nodes, by shape (GPU count, the first GPU's free memory): every idle node of a
// shape has the first one's (MeasureFgd evaluates one node per shape).
using IdleShapes = std::vector<std::tuple<int, int64_t, double>>;
double IdleNodeFragment(IdleShapes& shapes, std::span<const GpuRoom> rooms, const TargetWorkload& w,
                        double total_weight) {
  const int count = static_cast<int>(rooms.size());
  const int64_t mem = rooms.empty() ? 0 : rooms.front().free_memory.count();
  auto it = std::find_if(shapes.begin(), shapes.end(), [&](const auto& s) {
    return std::get<0>(s) == count && std::get<1>(s) == mem;
  });
  if (it == shapes.end()) {
    shapes.emplace_back(count, mem, FgdOfRooms(rooms, w, total_weight));
    it = std::prev(shapes.end());
  }
  return std::get<2>(*it);
}

// A node's GPUs' free room as RoomsOf builds it, from FragmentationMeter's per-GPU entries.
template <typename Entries>
void CachedRooms(const ClusterState& state, NodeId node, const Entries& gpus,
                 std::vector<GpuRoom>& rooms) {
  rooms.clear();
  for (GpuId id : state.gpus_of(node))
    rooms.push_back({gpus[id.value()].unallocated, gpus[id.value()].memory_free});
}

std::vector<GpuRoom> RoomsOf(const ClusterState& state, NodeId node) {
  std::vector<GpuRoom> rooms;
  for (GpuId id : state.gpus_of(node)) {
    const GpuState& g = state.gpu(id);
    rooms.push_back({Unallocated(g), g.memory_free()});
  }
  return rooms;
}

}  // namespace

double GuaranteedSmTime(const GpuState& gpu) {
  double sum = 0;
  for (const Allocation& a : gpu.allocations)
    sum += a.quota.request * a.quota.time_quota;
  return sum;
}

GpuFragment DiluFragment(const GpuState& gpu) {
  if (!gpu.active())
    return {};
  GpuFragment f;
  f.sm = 1.0 - std::min(1.0, GuaranteedSmTime(gpu));
  const double cap = static_cast<double>(gpu.spec.memory.count());
  f.memory = cap <= 0 ? 0.0 : static_cast<double>(gpu.memory_free().count()) / cap;
  return f;
}

DiluFragmentation MeasureDilu(const ClusterState& state) {
  DiluFragmentation d;
  for (GpuId id : state.active_gpus()) {
    const GpuState& g = state.gpu(id);
    const GpuFragment f = DiluFragment(g);
    ++d.active_gpus;
    d.sm_sum += f.sm;
    d.memory_sum += f.memory;
    d.memory_free += g.memory_free();
  }
  return d;
}

absl::Status ValidateTargetWorkload(const TargetWorkload& w) {
  if (w.tasks.empty())
    return absl::InvalidArgumentError("target workload has no task classes");
  for (size_t i = 0; i < w.tasks.size(); ++i) {
    const TaskClass& t = w.tasks[i];
    if (t.gpus < 0 || !(t.share > 0 && t.share <= 1) || t.memory.count() < 0 || !(t.weight >= 0) ||
        !std::isfinite(t.weight) || !(t.time_quota > 0 && t.time_quota <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("target workload task ", i, ": need gpus >= 0, 0 < share <= 1, ",
                       "0 < time_quota <= 1, memory >= 0, finite weight >= 0 (gpus=", t.gpus,
                       ", share=", t.share, ", time_quota=", t.time_quota, ", weight=", t.weight,
                       ")"));
    }
  }
  if (!(TotalWeight(w) > 0)) {
    return absl::InvalidArgumentError("target workload weights must sum to a positive value");
  }
  return absl::OkStatus();
}

double FgdNodeFragmentation(const ClusterState& state, NodeId node, const TargetWorkload& w) {
  const std::vector<GpuRoom> rooms = RoomsOf(state, node);
  return FgdOfRooms(rooms, w, TotalWeight(w));
}

FgdFragmentation MeasureFgd(const ClusterState& state, const TargetWorkload& w) {
  const double total_weight = TotalWeight(w);
  // Idle nodes of one shape (GPU count, GPU memory) all have the same fragment.
  IdleShapes idle_shapes;
  FgdFragmentation out;
  std::vector<GpuRoom> rooms;
  for (int n = 0; n < state.node_count(); ++n) {
    rooms.clear();
    bool active = false;
    for (GpuId id : state.gpus_of(NodeId(n))) {
      const GpuState& g = state.gpu(id);
      active = active || g.active();
      rooms.push_back({Unallocated(g), g.memory_free()});
      out.unallocated_sum += rooms.back().free_share;
    }
    if (active) {
      out.fragment_sum += FgdOfRooms(rooms, w, total_weight);
      continue;
    }
    out.fragment_sum += IdleNodeFragment(idle_shapes, rooms, w, total_weight);
  }
  return out;
}

FragmentationMeter::FragmentationMeter(TargetWorkload w)
    : workload_(std::move(w)), total_weight_(TotalWeight(workload_)) {}

const FragmentationMeter::GpuEntry& FragmentationMeter::Gpu(const ClusterState& state, GpuId id) {
  GpuEntry& e = gpus_[id.value()];
  const GpuState& g = state.gpu(id);
  if (e.version != g.version + 1) {
    e.version = g.version + 1;
    e.dilu = DiluFragment(g);
    e.unallocated = Unallocated(g);
    e.memory_free = g.memory_free();
  }
  return e;
}

// F_n(M) of an active node (from the cache unless one of its GPUs changed); `active` says
// whether it is. Adds nothing to any sum: the caller adds R_g GPU by GPU, in MeasureFgd's order.
double FragmentationMeter::NodeFragment(const ClusterState& state, NodeId node, bool& active) {
  uint64_t key = 0;
  active = false;
  for (GpuId id : state.gpus_of(node)) {
    key += Gpu(state, id).version;
    active = active || state.gpu(id).active();
  }
  NodeEntry& e = nodes_[node.value()];
  if (!active || e.key == key)
    return e.fragment;
  std::vector<GpuRoom> rooms;
  CachedRooms(state, node, gpus_, rooms);
  e.key = key;
  e.fragment = FgdOfRooms(rooms, workload_, total_weight_);
  return e.fragment;
}

FragmentationMeter::Reading FragmentationMeter::Measure(const ClusterState& state) {
  gpus_.resize(static_cast<size_t>(state.gpu_count()));
  nodes_.resize(static_cast<size_t>(state.node_count()));
  Reading r;
  for (GpuId id : state.active_gpus()) {  // MeasureDilu's sums, in its order
    const GpuEntry& e = Gpu(state, id);
    ++r.dilu.active_gpus;
    r.dilu.sm_sum += e.dilu.sm;
    r.dilu.memory_sum += e.dilu.memory;
    r.dilu.memory_free += e.memory_free;
  }
  if (workload_.tasks.empty())
    return r;
  FgdFragmentation f;  // MeasureFgd's sums, in its order
  IdleShapes idle_shapes;
  std::vector<GpuRoom> rooms;
  for (int n = 0; n < state.node_count(); ++n) {
    bool active = false;
    const double fragment = NodeFragment(state, NodeId(n), active);
    for (GpuId id : state.gpus_of(NodeId(n)))
      f.unallocated_sum += gpus_[id.value()].unallocated;
    if (active) {
      f.fragment_sum += fragment;
      continue;
    }
    CachedRooms(state, NodeId(n), gpus_, rooms);
    f.fragment_sum += IdleNodeFragment(idle_shapes, rooms, workload_, total_weight_);
  }
  r.fgd = f.ratio();
  return r;
}

}  // namespace sluice::core
