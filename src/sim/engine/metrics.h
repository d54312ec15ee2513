// Metrics of one simulation run: per-function request latencies, SLO violations, drops, cold
// starts and training progress (FunctionMetrics), and cluster-wide allocation integrals,
// active-GPU counts, fragmentation and the per-interval timeline (ClusterMetrics). Filled by the
// engine, turned into RunResult at the end. Not thread-safe.
//
// Definitions (also in src/sim/engine/README.md):
//  - latency = completion - arrival; percentiles are exact nearest-rank over every completed
//    request (the latencies are stored: 8 bytes per request, fine up to tens of millions); in
//    fluid mode (sim_config.h) fluid windows add a 1 %-bucket histogram, merged in;
//  - SVR = (completed with latency > SLO + dropped) / arrivals;
//  - throughput = completions / horizon;
//  - GPU-seconds = integral over [0, horizon] of the sum over active GPUs of
//    min(1, sum of SM quota.request x time_quota of the allocations on that GPU) (a GPU is active
//    while it hosts at least one allocation);
//  - held GPU-seconds (per function) = integral over [0, horizon] of quota.request x time_quota
//    summed over the GPUs each of its instances holds, from placement to release; cost = the
//    same integral weighted by each GPU's price per second (HeldMeter);
//  - mean active GPUs = integral of the active count over [0, horizon] / horizon; peak = maximum
//    reached at any time in [0, horizon];
//  - fragmentation (Dilu §5.5 SM and memory, FGD ratio) = mean over the timeline samples;
//  - idle memory (issue 13) = integral over [0, horizon] of the GPU memory (GiB, all its GPUs)
//    of each placed instance while nothing is dispatched to it (loading, idle warm, parked);
//  - cold-start wait = time requests spent held at the gateway while their function had no warm
//    instance, plus the un-parking delay of requests that reached a parked instance.
#ifndef SLUICE_SIM_ENGINE_METRICS_H_
#define SLUICE_SIM_ENGINE_METRICS_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

#include "core/resource/cluster.h"
#include "core/resource/fragmentation.h"
#include "sim/engine/latency_histogram.h"
#include "sim/engine/sim_config.h"

namespace sluice::sim {

class FunctionMetrics {
 public:
  // `sweep_ms`: extra SLO thresholds (ms) whose SVR Summarize reports in sweep_svr.
  explicit FunctionMetrics(absl::Duration slo = absl::InfiniteDuration(),
                           std::vector<double> sweep_ms = {})
      : slo_(slo), sweep_ms_(std::move(sweep_ms)) {}

  void OnArrival() { ++requests_; }
  void OnCompletion(absl::Duration latency);
  // Fluid mode: `n` arrivals counted in a window; `weight` completions of latency `ms` of which
  // `over_slo` (<= weight) exceeded the SLO (fractions: a queueing approximation's expectation).
  void OnArrivals(int64_t n) { requests_ += n; }
  void OnFluidCompletions(double ms, double weight) { fluid_.Add(ms, weight); }
  void OnFluidOverSlo(double over_slo) { fluid_over_slo_ += over_slo; }
  void OnDrop(int64_t n) { dropped_ += n; }
  void OnColdStart() { ++cold_starts_; }
  void OnVerticalScaling() { ++vertical_scalings_; }
  void OnRejectedAction() { ++rejected_actions_; }
  void OnIdleMemory(double gib_s) { idle_memory_gib_s_ += gib_s; }
  void OnColdStartWait(absl::Duration d) { cold_start_wait_s_ += absl::ToDoubleSeconds(d); }
  void OnPark() { ++parks_; }
  void OnUnpark() { ++unparks_; }
  void SetTraining(double iters_per_s, double jct_s) {
    iters_per_s_ = iters_per_s;
    jct_s_ = jct_s;
  }

  int64_t requests() const { return requests_; }
  int64_t completed() const {
    return static_cast<int64_t>(latency_ms_.size()) + std::llround(fluid_.total());
  }
  int64_t cold_starts() const { return cold_starts_; }
  int64_t vertical_scalings() const { return vertical_scalings_; }
  int64_t rejected_actions() const { return rejected_actions_; }

  // Summary over the run; `horizon` is the throughput denominator. Sorts a copy of the latencies.
  FunctionResult Summarize(const std::string& name, absl::Duration horizon) const;

 private:
  absl::Duration slo_;
  std::vector<double> sweep_ms_;
  int64_t requests_ = 0;
  int64_t dropped_ = 0;
  int64_t over_slo_ = 0;
  int64_t cold_starts_ = 0;
  int64_t vertical_scalings_ = 0;
  int64_t rejected_actions_ = 0;
  double idle_memory_gib_s_ = 0;
  double cold_start_wait_s_ = 0;
  int64_t parks_ = 0;
  int64_t unparks_ = 0;
  double sum_ms_ = 0;
  double iters_per_s_ = 0;
  double jct_s_ = 0;
  std::vector<double> latency_ms_;
  LatencyHistogram fluid_;      // fluid windows' latencies (empty in exact runs)
  double fluid_over_slo_ = 0;  // fluid windows' expected requests over the SLO
};

// GPU time held by a set of instances and its price, integrated over [start, end]. Both rates are
// piecewise constant: they change when an instance is placed, changes quota or is released.
class HeldMeter {
 public:
  HeldMeter() = default;
  HeldMeter(absl::Time start, absl::Time end) : end_(end), last_(start) {}
  // From `now` on, the held share (GPU fractions: request x time quota summed over GPUs) grows by
  // `share` and the price rate by `usd_per_s` (both negative on release).
  void Change(absl::Time now, double share, double usd_per_s);
  // Integrals up to min(now, end): GPU-seconds held and US dollars.
  double share_seconds(absl::Time now);
  double usd(absl::Time now);

 private:
  void Integrate(absl::Time now);
  absl::Time end_;
  absl::Time last_;
  double share_ = 0;
  double usd_per_s_ = 0;
  double share_seconds_ = 0;
  double usd_ = 0;
};

// Nearest-rank percentile (p in (0, 1]) of sorted values; 0 for an empty vector.
double NearestRank(const std::vector<double>& sorted, double p);
// Index of that value in a sorted vector of n >= 1 values: ceil(p x n) - 1, clamped.
size_t RankIndex(size_t n, double p);

class ClusterMetrics {
 public:
  // Integrals cover [start, start + horizon].
  ClusterMetrics(absl::Time start, absl::Duration horizon);

  // Reports the cluster's totals right after a change at `now` (allocated share = sum over
  // active GPUs of min(1, sum of requests)); the previous totals are integrated up to `now`.
  void Update(absl::Time now, double allocated_share, int active_gpus);
  // Appends a timeline row for `now` and folds the fragmentation measures into the averages.
  // `fgd_workload` may be empty (no FGD measure) and must be the same at every call (a
  // core::FragmentationMeter made at the first keeps per-GPU results between samples).
  // `cost_usd`: the cost held so far.
  void Sample(absl::Time now, const core::ClusterState& state,
              const core::TargetWorkload& fgd_workload, std::vector<int> instances,
              std::vector<double> rps, double cost_usd);
  // Integrates up to the end of the window and writes the cluster fields of `out`.
  void Finish(RunResult& out);

 private:
  void Integrate(absl::Time now);

  absl::Time start_;
  absl::Time end_;
  absl::Time last_;
  double allocated_ = 0;
  int active_ = 0;
  int peak_ = 0;
  double share_seconds_ = 0;
  double active_seconds_ = 0;
  double sm_frag_sum_ = 0;
  double mem_frag_sum_ = 0;
  double fgd_sum_ = 0;
  int64_t samples_ = 0;
  std::vector<TimelineRow> timeline_;
  std::unique_ptr<core::FragmentationMeter> meter_;  // made at the first Sample
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_METRICS_H_
