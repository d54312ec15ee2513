// A pipeline's results (PipelineResult, StageResult) from what the engine measured during the
// run: end-to-end latencies, SLO sweep, per-stage time averages (README "Metrics").
#include <algorithm>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"

namespace sluice::sim {

PipelineResult Engine::SummarizePipeline(int p) {
  PipelineState& ps = pipes_[p];
  const PipelineConfig& pc = *ps.config;
  PipelineResult r;
  r.name = pc.name;
  r.requests = fns_[ps.stages.front()].metrics.requests();
  std::vector<double> lat = ps.latency_ms;
  std::sort(lat.begin(), lat.end());
  r.completed = static_cast<int64_t>(lat.size());
  r.dropped = std::max<int64_t>(0, r.requests - r.completed);
  double sum = 0;
  for (double v : lat)
    sum += v;
  r.mean_ms = lat.empty() ? 0 : sum / static_cast<double>(lat.size());
  r.p50_ms = NearestRank(lat, 0.5);
  r.p75_ms = NearestRank(lat, 0.75);
  r.p95_ms = NearestRank(lat, 0.95);
  r.p99_ms = NearestRank(lat, 0.99);
  const double horizon_s = absl::ToDoubleSeconds(config_.horizon);
  const double req = static_cast<double>(r.requests);
  auto within = [&](double ms) {  // completions at or under `ms`
    return static_cast<double>(std::upper_bound(lat.begin(), lat.end(), ms) - lat.begin());
  };
  const double ok = within(absl::ToDoubleMilliseconds(pc.slo));
  r.svr = req > 0 ? (req - ok) / req : 0;
  r.goodput_rps = ok / horizon_s;
  for (const double m : pc.slo_multipliers) {
    const double w = within(absl::ToDoubleMilliseconds(pc.slo_base) * m);
    r.sweep_goodput_rps.push_back(w / horizon_s);
    r.sweep_slo_satisfaction.push_back(req > 0 ? w / req : 0);
  }
  for (int fn : ps.stages) {
    r.held_gpu_seconds += fns_[fn].held.share_seconds(horizon_);
    r.stages.push_back(SummarizeStage(fn));
  }
  return r;
}

StageResult Engine::SummarizeStage(int fn) {
  Function& f = fns_[fn];
  StageState& st = *f.stage;
  StageResult s;
  s.function = f.config->name;
  s.mean_queue_length = st.waiting.Mean(horizon_);
  s.arrival_cv = st.gaps_run.Cv(0.0);
  const double servers = st.servers.Mean(horizon_);
  s.utilisation = servers > 0 ? std::min(1.0, st.busy.Mean(horizon_) / servers) : 0.0;
  s.mean_replicas = st.gpu_replicas.Mean(horizon_);
  s.mean_cpu_workers = st.cpu_deployed.Mean(horizon_);
  s.mean_sojourn_ms = st.sojourn_run.Mean() * 1000.0;
  s.mean_transfer_ms = st.transfer.Mean() * 1000.0;
  s.cold_starts = f.metrics.cold_starts();
  s.key_stage_ever = st.key_ever;
  return s;
}

}  // namespace sluice::sim
