// CapacityModel: RaPP's role in HAS-GPU's Algorithm 1, the request throughput of one pod
// configuration (b, s, q) under the function's SLO, and the search for the cheapest configuration
// that serves a given rate (RaPPbyThroughput). Built per function by the HybridAutoscaler and the
// has-gpu / fast-gshare policy sets; latency comes from the perf model's LatencyModel (the
// latency predictor plugs in there). Caches its grid lazily; not thread-safe.
#ifndef SLUICE_CORE_HASGPU_CAPACITY_MODEL_H_
#define SLUICE_CORE_HASGPU_CAPACITY_MODEL_H_

#include <optional>
#include <span>
#include <vector>

#include "absl/time/time.h"

#include "core/perf/perf_model.h"

namespace sluice::core {

// What HAS-GPU needs to know about one function.
struct HasGpuFunction {
  // Owned by the caller's PerfModel; outlives the objects built from this. Null: latency unknown,
  // capacity is then linear in s x q: fallback_rps_per_gpu x s x q.
  const LatencyModel* latency = nullptr;
  int max_batch = 1;
  absl::Duration slo = absl::InfiniteDuration();
  Bytes memory;  // GPU memory of one pod
  double fallback_rps_per_gpu = 0;
  int min_instances = 1;  // HAS-GPU never scales to zero: raised to >= 1
  int max_instances = 1 << 20;
};

struct CapacityOptions {
  // A configuration meets the SLO when its batch latency <= slo_fraction x SLO: a request can
  // wait for the batch in flight and then run in its own, so ~2 batch latencies is its worst case.
  double slo_fraction = 0.5;
  double sm_step = 0.1;     // SM partitions offered to new pods: sm_step, 2 sm_step, ..., 1
  double quota_step = 0.1;  // time quotas offered: quota_step, 2 quota_step, ..., 1 (Delta I_q)
};

// One pod configuration and what it serves.
struct PodConfig {
  int batch = 1;
  double sm = 1;
  double q = 1;
  double capacity = 0;  // requests/s within the SLO
  double cost() const { return sm * q; }
};

// A place a new pod could go: partition `sm` with time quota at most `max_q`.
struct PartitionRoom {
  double sm = 1;
  double max_q = 1;
};

class CapacityModel {
 public:
  // Precondition: options validated (steps in (0, 1], slo_fraction in (0, 1]).
  CapacityModel(const HasGpuFunction& f, const CapacityOptions& options);

  // RaPP(f, b, s, q) -> requests/s: b / BatchLatency(b, s, q), or 0 when that latency exceeds the
  // SLO bound. Monotone non-decreasing in s and q when the latency model is monotone.
  double Capacity(int batch, double sm, double q) const;
  // The best batch (highest capacity; ties: smaller batch) at (s, q).
  PodConfig Best(double sm, double q) const;
  // RaPPbyThroughput: among partitions in `rooms` and quotas on the grid (<= each room's max_q),
  // the cheapest configuration (least s x q; ties: more capacity) with capacity >= need. When none
  // reaches `need`, the one with the most capacity (ties: cheaper). nullopt when every candidate
  // has zero capacity.
  std::optional<PodConfig> Cheapest(double need, std::span<const PartitionRoom> rooms) const;
  // Cheapest over the whole grid (a pod alone on a new GPU).
  std::optional<PodConfig> CheapestAnywhere(double need) const;
  // The partition grid and quota grid.
  const std::vector<double>& partitions() const { return partitions_; }
  const std::vector<double>& quotas() const { return quotas_; }
  const HasGpuFunction& function() const { return f_; }
  const CapacityOptions& options() const { return options_; }

 private:
  // Best() on the grid, cached.
  const PodConfig& GridBest(size_t s_index, size_t q_index) const;

  HasGpuFunction f_;
  CapacityOptions options_;
  absl::Duration bound_;
  std::vector<int> batches_;
  std::vector<double> partitions_;
  std::vector<double> quotas_;
  mutable std::vector<std::optional<PodConfig>> grid_;  // [s_index x quotas + q_index]
};

// k x step for k = 1.. while <= 1 (+1e-9), with 1 appended when the step does not divide 1.
std::vector<double> StepGrid(double step);

}  // namespace sluice::core

#endif  // SLUICE_CORE_HASGPU_CAPACITY_MODEL_H_
