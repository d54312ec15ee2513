// Metric bookkeeping. Percentiles use the nearest-rank definition (the smallest value with at
// least p of the sample at or below it), which needs no interpolation and matches exact counts.
#include "sim/engine/metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace sluice::sim {

void FunctionMetrics::OnCompletion(absl::Duration latency) {
  const double ms = absl::ToDoubleMilliseconds(latency);
  latency_ms_.push_back(ms);
  sum_ms_ += ms;
  if (latency > slo_)
    ++over_slo_;
}

size_t RankIndex(size_t n, double p) {
  if (n == 0)
    return 0;
  const int64_t rank = static_cast<int64_t>(std::ceil(p * static_cast<double>(n)));
  return static_cast<size_t>(std::clamp<int64_t>(rank, 1, static_cast<int64_t>(n)) - 1);
}

double NearestRank(const std::vector<double>& sorted, double p) {
  return sorted.empty() ? 0 : sorted[RankIndex(sorted.size(), p)];
}

namespace {
// The nearest-rank p-quantile of `v`, knowing that v[from..] holds every element >= it (a
// previous selection's pivot); reorders v.
double Select(std::vector<double>& v, size_t from, double p) {
  if (v.empty())
    return 0;
  const size_t k = RankIndex(v.size(), p);
  std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(from),
                   v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}
// SVR at each threshold: (latencies above it + dropped) / requests. Sorts `latencies`.
std::vector<double> SweepSvr(std::vector<double> latencies, const std::vector<double>& sweep_ms,
                             int64_t dropped, int64_t requests) {
  std::vector<double> out;
  if (sweep_ms.empty()) return out;
  std::sort(latencies.begin(), latencies.end());
  out.reserve(sweep_ms.size());
  for (const double t : sweep_ms) {
    const auto above = latencies.end() - std::upper_bound(latencies.begin(), latencies.end(), t);
    out.push_back(requests == 0 ? 0
                                : static_cast<double>(above + dropped) /
                                      static_cast<double>(requests));
  }
  return out;
}

}  // namespace

FunctionResult FunctionMetrics::Summarize(const std::string& name, absl::Duration horizon) const {
  FunctionResult r;
  r.name = name;
  r.requests = requests_;
  r.completed = completed();
  r.dropped = dropped_;
  r.cold_starts = cold_starts_;
  r.vertical_scalings = vertical_scalings_;
  r.rejected_actions = rejected_actions_;
  r.idle_memory_gib_s = idle_memory_gib_s_;
  r.cold_start_wait_s = cold_start_wait_s_;
  r.cold_start_ms_per_request =
      requests_ == 0 ? 0 : cold_start_wait_s_ * 1000 / static_cast<double>(requests_);
  r.parks = parks_;
  r.unparks = unparks_;
  std::vector<double> v = latency_ms_;
  if (fluid_.empty()) {
    // Three selections instead of a sort: O(n) each, on a shrinking suffix.
    r.p50_ms = Select(v, 0, 0.50);
    r.p95_ms = Select(v, RankIndex(v.size(), 0.50), 0.95);
    r.p99_ms = Select(v, RankIndex(v.size(), 0.95), 0.99);
    r.mean_ms = v.empty() ? 0 : sum_ms_ / static_cast<double>(v.size());
  } else {
    std::sort(v.begin(), v.end());
    r.p50_ms = MergedPercentile(v, fluid_, 0.50);
    r.p95_ms = MergedPercentile(v, fluid_, 0.95);
    r.p99_ms = MergedPercentile(v, fluid_, 0.99);
    r.mean_ms = (sum_ms_ + fluid_.sum_ms()) / (static_cast<double>(v.size()) + fluid_.total());
  }
  r.svr = requests_ == 0 ? 0
                         : (static_cast<double>(over_slo_ + dropped_) + fluid_over_slo_) /
                               static_cast<double>(requests_);
  const double horizon_s = absl::ToDoubleSeconds(horizon);
  r.throughput_rps = horizon_s > 0 ? static_cast<double>(r.completed) / horizon_s : 0;
  r.training_iters_per_s = iters_per_s_;
  r.jct_s = jct_s_;
  r.sweep_svr = SweepSvr(std::move(v), sweep_ms_, dropped_, requests_);
  return r;
}

void HeldMeter::Integrate(absl::Time now) {
  const absl::Time until = std::min(now, end_);
  if (until > last_) {
    const double dt = absl::ToDoubleSeconds(until - last_);
    share_seconds_ += share_ * dt;
    usd_ += usd_per_s_ * dt;
    last_ = until;
  }
}

void HeldMeter::Change(absl::Time now, double share, double usd_per_s) {
  Integrate(now);
  share_ += share;
  usd_per_s_ += usd_per_s;
}

double HeldMeter::share_seconds(absl::Time now) {
  Integrate(now);
  return share_seconds_;
}

double HeldMeter::usd(absl::Time now) {
  Integrate(now);
  return usd_;
}

ClusterMetrics::ClusterMetrics(absl::Time start, absl::Duration horizon)
    : start_(start), end_(start + horizon), last_(start) {}

void ClusterMetrics::Integrate(absl::Time now) {
  const absl::Time until = std::min(now, end_);
  if (until > last_) {
    const double dt = absl::ToDoubleSeconds(until - last_);
    share_seconds_ += allocated_ * dt;
    active_seconds_ += active_ * dt;
    last_ = until;
  }
}

void ClusterMetrics::Update(absl::Time now, double allocated_share, int active_gpus) {
  Integrate(now);
  allocated_ = allocated_share;
  active_ = active_gpus;
  if (now <= end_)
    peak_ = std::max(peak_, active_gpus);
}

void ClusterMetrics::Sample(absl::Time now, const core::ClusterState& state,
                            const core::TargetWorkload& fgd_workload, std::vector<int> instances,
                            std::vector<double> rps, double cost_usd) {
  if (meter_ == nullptr)
    meter_ = std::make_unique<core::FragmentationMeter>(fgd_workload);
  const core::FragmentationMeter::Reading reading = meter_->Measure(state);
  const core::DiluFragmentation& dilu = reading.dilu;
  const double fgd = reading.fgd;
  TimelineRow row;
  row.t_s = absl::ToDoubleSeconds(now - start_);
  row.active_gpus = static_cast<int>(state.active_gpus().size());
  row.allocated_share = allocated_;
  row.sm_fragmentation = dilu.sm();
  row.mem_fragmentation = dilu.memory();
  row.instances = std::move(instances);
  row.rps = std::move(rps);
  row.cost_usd = cost_usd;
  timeline_.push_back(std::move(row));
  sm_frag_sum_ += dilu.sm();
  mem_frag_sum_ += dilu.memory();
  fgd_sum_ += fgd;
  ++samples_;
}

void ClusterMetrics::Finish(RunResult& out) {
  Integrate(end_);
  const double horizon_s = absl::ToDoubleSeconds(end_ - start_);
  out.gpu_seconds = share_seconds_;
  out.peak_active_gpus = peak_;
  out.mean_active_gpus = horizon_s > 0 ? active_seconds_ / horizon_s : 0;
  const double n = samples_ > 0 ? static_cast<double>(samples_) : 1.0;
  out.sm_fragmentation = sm_frag_sum_ / n;
  out.mem_fragmentation = mem_frag_sum_ / n;
  out.fgd_fragmentation = fgd_sum_ / n;
  out.timeline = std::move(timeline_);
}

}  // namespace sluice::sim
