// Formatting of LlmRunResults: JSON, table, CSV. Non-finite numbers become JSON null / empty CSV
// cells so that a run with no completed requests still prints.
#include "sim/llm_experiment/llm_report.h"

#include <cmath>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "common/status.h"
#include "sim/experiment/report.h"

namespace sluice::sim::llm {
namespace {

using Json = nlohmann::ordered_json;

Json Number(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

const LlmFunctionConfig* FindFunction(const LlmSimConfig& config, const std::string& name) {
  for (const LlmFunctionConfig& f : config.functions) {
    if (f.name == name)
      return &f;
  }
  return nullptr;
}

Json FunctionJson(const LlmSimConfig& config, const LlmFunctionResult& f) {
  Json j;
  j["name"] = f.name;
  if (const LlmFunctionConfig* fc = FindFunction(config, f.name); fc != nullptr) {
    j["model"] = fc->model;
    j["tp"] = fc->tp;
    j["ttft_slo_ms"] = Number(absl::ToDoubleMilliseconds(fc->ttft_slo));
    j["tbt_slo_ms"] = Number(absl::ToDoubleMilliseconds(fc->tbt_slo));
  }
  j["requests"] = f.requests;
  j["completed"] = f.completed;
  j["rejected"] = f.rejected;
  j["ttft_p50_ms"] = Number(f.ttft_p50_ms);
  j["ttft_p99_ms"] = Number(f.ttft_p99_ms);
  j["ttft_mean_ms"] = Number(f.ttft_mean_ms);
  j["tbt_p50_ms"] = Number(f.tbt_p50_ms);
  j["tbt_p99_ms"] = Number(f.tbt_p99_ms);
  j["tbt_mean_ms"] = Number(f.tbt_mean_ms);
  j["slo_attainment"] = Number(f.slo_attainment);
  j["scale_outs"] = f.scale_outs;
  j["scale_ins"] = f.scale_ins;
  j["mutations"] = f.mutations;
  j["live_scales"] = f.live_scales;
  j["preemptions"] = f.preemptions;
  j["mean_load_s"] = Number(f.mean_load_s);
  j["instance_failures"] = f.instance_failures;
  j["requeued"] = f.requeued;
  return j;
}

double EventsPerSecond(const LlmRunResult& run) {
  return run.wall_s > 0 ? static_cast<double>(run.events) / run.wall_s : NAN;
}

std::string Cell(double v, const char* format) {
  return std::isfinite(v) ? absl::StrFormat(format, v) : std::string("-");
}

std::string CsvNumber(double v) {
  return std::isfinite(v) ? absl::StrCat(v) : std::string();
}

}  // namespace

Json LlmRunJson(const LlmSimConfig& config, const LlmRunResult& run) {
  Json j;
  j["policy"] = run.policy;
  j["gpu_seconds"] = Number(run.gpu_seconds);
  j["mean_gpus"] = Number(run.mean_gpus);
  j["peak_gpus"] = Number(run.peak_gpus);
  j["host_cache_gib_mean"] = Number(run.host_cache_gib_mean);
  j["host_cache_gib_peak"] = Number(run.host_cache_gib_peak);
  j["events"] = run.events;
  j["events_per_s"] = Number(EventsPerSecond(run));
  j["wall_s"] = Number(run.wall_s);
  Json fs = Json::array();
  for (const LlmFunctionResult& f : run.functions)
    fs.push_back(FunctionJson(config, f));
  j["functions"] = std::move(fs);
  return j;
}

Json LlmSummaryJson(const LlmSimConfig& config, std::span<const LlmRunResult> runs) {
  Json j;
  j["experiment"] = config.name;
  j["kind"] = "llm_serving";
  j["seed"] = config.seed;
  j["duration_s"] = Number(absl::ToDoubleSeconds(config.duration));
  Json c;
  c["name"] = config.cluster.name;
  c["nodes"] = config.cluster.nodes;
  c["gpus"] = config.cluster.nodes * config.cluster.gpus_per_node;
  c["gpu"] = config.gpu;
  j["cluster"] = std::move(c);
  Json rs = Json::array();
  for (const LlmRunResult& r : runs)
    rs.push_back(LlmRunJson(config, r));
  j["runs"] = std::move(rs);
  return j;
}

std::string LlmSummaryJsonText(const LlmSimConfig& config, std::span<const LlmRunResult> runs) {
  return LlmSummaryJson(config, runs).dump(2) + "\n";
}

std::string LlmSummaryTable(const LlmSimConfig& config, std::span<const LlmRunResult> runs) {
  std::string out =
      absl::StrFormat("experiment %s (llm_serving, cluster %s: %d x %d GPUs, %.0f s)\n",
                      config.name, config.cluster.name, config.cluster.nodes,
                      config.cluster.gpus_per_node, absl::ToDoubleSeconds(config.duration));
  absl::StrAppendFormat(&out, "%-30s %-14s %8s %9s %9s %8s %8s %6s %5s %5s %4s %4s\n", "policy",
                        "function", "requests", "ttft_p50", "ttft_p99", "tbt_p50", "tbt_p99",
                        "slo%", "outs", "ins", "mut", "live");
  for (const LlmRunResult& r : runs) {
    for (const LlmFunctionResult& f : r.functions) {
      absl::StrAppendFormat(&out, "%-30s %-14s %8d %9s %9s %8s %8s %6s %5d %5d %4d %4d\n", r.policy,
                            f.name, f.requests, Cell(f.ttft_p50_ms, "%.1f"),
                            Cell(f.ttft_p99_ms, "%.1f"), Cell(f.tbt_p50_ms, "%.1f"),
                            Cell(f.tbt_p99_ms, "%.1f"), Cell(100 * f.slo_attainment, "%.1f"),
                            f.scale_outs, f.scale_ins, f.mutations, f.live_scales);
    }
    absl::StrAppendFormat(&out,
                          "%-30s GPU-s %s, GPUs mean %s peak %s, host cache GiB mean %s peak %s,"
                          " %d events\n",
                          r.policy, Cell(r.gpu_seconds, "%.1f"), Cell(r.mean_gpus, "%.2f"),
                          Cell(r.peak_gpus, "%.0f"), Cell(r.host_cache_gib_mean, "%.1f"),
                          Cell(r.host_cache_gib_peak, "%.1f"), r.events);
  }
  out += "(latencies in ms; slo%: requests meeting both TTFT and TBT SLOs)\n";
  return out;
}

std::string LlmTimelineCsv(const LlmRunResult& run) {
  std::string out =
      "t_s,prefill_tokens_per_s,decode_tokens_per_s,prefill_instances,decode_instances,"
      "loading_instances,gpus_busy,host_cache_gib,network_gbps\n";
  for (const LlmTimelinePoint& p : run.timeline) {
    absl::StrAppend(&out, CsvNumber(p.t_s), ",", CsvNumber(p.prefill_tokens_per_s), ",",
                    CsvNumber(p.decode_tokens_per_s), ",", p.prefill_instances, ",",
                    p.decode_instances, ",", p.loading_instances, ",", CsvNumber(p.gpus_busy), ",",
                    CsvNumber(p.host_cache_gib), ",", CsvNumber(p.network_gbps), "\n");
  }
  return out;
}

std::string LlmSummaryCsv(std::span<const LlmRunResult> runs) {
  std::string out =
      "policy,function,requests,completed,rejected,ttft_p50_ms,ttft_p99_ms,tbt_p50_ms,"
      "tbt_p99_ms,slo_attainment,scale_outs,scale_ins,mutations,live_scales,preemptions,"
      "instance_failures,requeued,gpu_seconds,mean_gpus,peak_gpus,host_cache_gib_mean,"
      "host_cache_gib_peak\n";
  for (const LlmRunResult& r : runs) {
    for (const LlmFunctionResult& f : r.functions) {
      absl::StrAppend(&out, r.policy, ",", f.name, ",", f.requests, ",", f.completed, ",",
                      f.rejected, ",", CsvNumber(f.ttft_p50_ms), ",", CsvNumber(f.ttft_p99_ms), ",",
                      CsvNumber(f.tbt_p50_ms), ",", CsvNumber(f.tbt_p99_ms), ",",
                      CsvNumber(f.slo_attainment), ",", f.scale_outs, ",", f.scale_ins, ",",
                      f.mutations, ",", f.live_scales, ",", f.preemptions, ",",
                      f.instance_failures, ",", f.requeued, ",");
      absl::StrAppend(&out, CsvNumber(r.gpu_seconds), ",", CsvNumber(r.mean_gpus), ",",
                      CsvNumber(r.peak_gpus), ",", CsvNumber(r.host_cache_gib_mean), ",",
                      CsvNumber(r.host_cache_gib_peak), "\n");
    }
  }
  return out;
}

std::string LlmTimelineFileName(const LlmRunResult& run) {
  return absl::StrCat(run.policy, "_timeline.csv");
}

absl::Status WriteLlmOutputDir(const std::string& dir, const LlmSimConfig& config,
                               std::span<const LlmRunResult> runs) {
  SLUICE_RETURN_IF_ERROR(CreateOutputDir(dir));
  const std::filesystem::path d(dir);
  SLUICE_RETURN_IF_ERROR(
      WriteTextFile((d / "summary.json").string(), LlmSummaryJsonText(config, runs)));
  SLUICE_RETURN_IF_ERROR(WriteTextFile((d / "summary.csv").string(), LlmSummaryCsv(runs)));
  for (const LlmRunResult& r : runs) {
    SLUICE_RETURN_IF_ERROR(WriteTextFile((d / LlmTimelineFileName(r)).string(), LlmTimelineCsv(r)));
  }
  return absl::OkStatus();
}

}  // namespace sluice::sim::llm
