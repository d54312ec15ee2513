// Pipeline rows of the JSON summary and the table (see pipeline_report.h).
#include "sim/experiment/pipeline_report.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::sim {
namespace {

using Json = nlohmann::ordered_json;

Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json NumberArray(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push_back(Number(x));
  return a;
}

const PipelineConfig* FindPipeline(const SimConfig& config, const std::string& name) {
  for (const PipelineConfig& p : config.pipelines) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Json StageJson(const StageResult& s) {
  Json j;
  j["function"] = s.function;
  j["mean_queue_length"] = Number(s.mean_queue_length);
  j["arrival_cv"] = Number(s.arrival_cv);
  j["utilisation"] = Number(s.utilisation);
  j["mean_replicas"] = Number(s.mean_replicas);
  j["mean_cpu_workers"] = Number(s.mean_cpu_workers);
  j["mean_sojourn_ms"] = Number(s.mean_sojourn_ms);
  j["mean_transfer_ms"] = Number(s.mean_transfer_ms);
  j["cold_starts"] = s.cold_starts;
  j["key_stage"] = s.key_stage_ever;
  return j;
}

Json PipelineJson(const PipelineConfig* config, const PipelineResult& p) {
  Json j;
  j["name"] = p.name;
  j["requests"] = p.requests;
  j["completed"] = p.completed;
  j["dropped"] = p.dropped;
  j["mean_ms"] = Number(p.mean_ms);
  j["p50_ms"] = Number(p.p50_ms);
  j["p75_ms"] = Number(p.p75_ms);
  j["p95_ms"] = Number(p.p95_ms);
  j["p99_ms"] = Number(p.p99_ms);
  j["svr"] = Number(p.svr);
  j["slo_ms"] = config == nullptr ? Json(nullptr) : Number(absl::ToDoubleMilliseconds(config->slo));
  j["goodput_rps"] = Number(p.goodput_rps);
  j["held_gpu_seconds"] = Number(p.held_gpu_seconds);
  if (config != nullptr && config->slo_base > absl::ZeroDuration()) {
    Json sweep;
    sweep["base_ms"] = Number(absl::ToDoubleMilliseconds(config->slo_base));
    sweep["multipliers"] = NumberArray(config->slo_multipliers);
    sweep["satisfaction"] = NumberArray(p.sweep_slo_satisfaction);
    sweep["goodput_rps"] = NumberArray(p.sweep_goodput_rps);
    j["slo_sweep"] = std::move(sweep);
  }
  Json stages = Json::array();
  for (const StageResult& s : p.stages) stages.push_back(StageJson(s));
  j["stages"] = std::move(stages);
  return j;
}

// "1x 0.12  1.5x 0.40 ..." for the table.
std::string SweepText(const PipelineConfig* config, const PipelineResult& p) {
  if (config == nullptr) return "";
  std::string out;
  const size_t n = std::min(config->slo_multipliers.size(), p.sweep_slo_satisfaction.size());
  for (size_t i = 0; i < n; ++i) {
    absl::StrAppendFormat(&out, "%s%gx %.1f%%", i == 0 ? "" : ", ", config->slo_multipliers[i],
                          100 * p.sweep_slo_satisfaction[i]);
  }
  return out;
}

void AppendStageTable(const PipelineResult& p, std::string& out) {
  size_t width = 5;
  for (const StageResult& s : p.stages) width = std::max(width, s.function.size());
  const int w = static_cast<int>(width);
  absl::StrAppendFormat(&out, "    %-*s %8s %8s %7s %8s %7s %9s %9s %5s %3s\n", w, "stage",
                        "queue", "arr CV", "util %", "replicas", "CPU wk", "sojourn", "xfer ms",
                        "cold", "key");
  for (const StageResult& s : p.stages) {
    absl::StrAppendFormat(&out, "    %-*s %8.2f %8.2f %7.1f %8.2f %7.2f %9.2f %9.2f %5d %3s\n",
                          w, s.function, s.mean_queue_length, s.arrival_cv, 100 * s.utilisation,
                          s.mean_replicas, s.mean_cpu_workers, s.mean_sojourn_ms,
                          s.mean_transfer_ms, s.cold_starts, s.key_stage_ever ? "yes" : "-");
  }
}

// Satisfaction at the multiplier closest to 1.5 (QUART's headline); NaN when not swept.
double HeadlineSatisfaction(const PipelineConfig* config, const PipelineResult& p) {
  if (config == nullptr) return NAN;
  double best = NAN, distance = 1e300;
  const size_t n = std::min(config->slo_multipliers.size(), p.sweep_slo_satisfaction.size());
  for (size_t i = 0; i < n; ++i) {
    const double d = std::abs(config->slo_multipliers[i] - 1.5);
    if (d < distance) {
      distance = d;
      best = p.sweep_slo_satisfaction[i];
    }
  }
  return best;
}

}  // namespace

Json PipelinesJson(const SimConfig& config, const RunResult& run) {
  Json list = Json::array();
  for (const PipelineResult& p : run.pipelines) {
    list.push_back(PipelineJson(FindPipeline(config, p.name), p));
  }
  return list;
}

void AppendPipelineTables(const SimConfig& config, const RunResult& run, std::string& out) {
  if (run.pipelines.empty()) return;
  size_t width = 8;
  for (const PipelineResult& p : run.pipelines) width = std::max(width, p.name.size());
  const int w = static_cast<int>(width);
  absl::StrAppendFormat(&out, "  %-*s %9s %9s %9s %9s %9s %7s %9s\n", w, "pipeline", "requests",
                        "mean ms", "p50 ms", "p75 ms", "p99 ms", "SVR %", "goodput");
  for (const PipelineResult& p : run.pipelines) {
    const PipelineConfig* pc = FindPipeline(config, p.name);
    absl::StrAppendFormat(&out, "  %-*s %9d %9.2f %9.2f %9.2f %9.2f %7.2f %9.3f\n", w, p.name,
                          p.requests, p.mean_ms, p.p50_ms, p.p75_ms, p.p99_ms, 100 * p.svr,
                          p.goodput_rps);
    if (p.dropped > 0) absl::StrAppendFormat(&out, "  %-*s %9d dropped\n", w, "", p.dropped);
    const std::string sweep = SweepText(pc, p);
    if (!sweep.empty()) {
      absl::StrAppendFormat(&out, "  %-*s SLO satisfaction at x %.0f ms: %s\n", w, "",
                            absl::ToDoubleMilliseconds(pc->slo_base), sweep);
    }
    AppendStageTable(p, out);
  }
}

void AppendPipelineComparison(const SimConfig& config, std::span<const RunResult> runs,
                              std::string& out) {
  size_t pw = 6, ww = 8, nw = 8;
  bool any = false;
  for (const RunResult& r : runs) {
    pw = std::max(pw, r.policy.size());
    ww = std::max(ww, r.workload.size());
    for (const PipelineResult& p : r.pipelines) nw = std::max(nw, p.name.size());
    any = any || !r.pipelines.empty();
  }
  if (!any) return;
  const int p = static_cast<int>(pw), w = static_cast<int>(ww), n = static_cast<int>(nw);
  absl::StrAppendFormat(&out, "\npipelines\n  %-*s %-*s %-*s %9s %9s %9s %8s %12s\n", p, "policy",
                        w, "workload", n, "pipeline", "mean ms", "p99 ms", "goodput", "SVR %",
                        "SLO@1.5x %");
  for (const RunResult& r : runs) {
    for (const PipelineResult& q : r.pipelines) {
      absl::StrAppendFormat(&out, "  %-*s %-*s %-*s %9.2f %9.2f %9.3f %8.2f %12.1f\n", p,
                            r.policy, w, r.workload, n, q.name, q.mean_ms, q.p99_ms,
                            q.goodput_rps, 100 * q.svr,
                            100 * HeadlineSatisfaction(FindPipeline(config, q.name), q));
    }
  }
}

}  // namespace sluice::sim
