// Formatting of RunResults. JSON numbers are written by nlohmann-json (shortest round-trip form),
// so the same results always give byte-identical text; the determinism tests rely on that.
#include "sim/experiment/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "sim/experiment/pipeline_report.h"

namespace sluice::sim {
namespace {

using Json = nlohmann::ordered_json;

Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// Functions and profiles by name, built once per report: a fleet has up to 50,000 functions, and
// a search per function was quadratic. The first of equal names wins, as a linear search would.
class Names {
 public:
  Names(const SimConfig& config, std::span<const ProfiledFunction> profiles) {
    functions_.reserve(config.functions.size());
    for (const FunctionConfig& f : config.functions) functions_.try_emplace(f.name, &f);
    profiles_.reserve(profiles.size());
    for (const ProfiledFunction& p : profiles) profiles_.try_emplace(p.function, &p.profile);
  }
  const FunctionConfig* Function(std::string_view name) const {
    const auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second;
  }
  const FunctionProfile* Profile(std::string_view name) const {
    const auto it = profiles_.find(name);
    return it == profiles_.end() ? nullptr : it->second;
  }
  bool IsTraining(std::string_view name) const {
    const FunctionConfig* f = Function(name);
    return f != nullptr && f->kind == FunctionKind::kTraining;
  }

 private:
  absl::flat_hash_map<std::string_view, const FunctionConfig*> functions_;
  absl::flat_hash_map<std::string_view, const FunctionProfile*> profiles_;
};

Json ProfileJson(const FunctionProfile& p) {
  Json j;
  j["request"] = Number(p.quota.request);
  j["limit"] = Number(p.quota.limit);
  j["batch"] = p.batch;
  j["trials"] = p.trials;
  return j;
}

// {"base_ms", "multipliers": [...], "svr": [...]}: the function's SLO sweep (HAS-GPU Fig. 6).
Json SweepJson(const Names& names, const FunctionResult& f) {
  Json j;
  if (const FunctionConfig* fc = names.Function(f.name)) {
    j["base_ms"] = Number(fc->slo_sweep_base_ms);
    j["multipliers"] = fc->slo_sweep_multipliers;
  }
  Json svr = Json::array();
  for (const double x : f.sweep_svr) svr.push_back(Number(x));
  j["svr"] = std::move(svr);
  return j;
}

Json FunctionJson(const Names& names, const FunctionResult& f) {
  Json j;
  j["name"] = f.name;
  j["requests"] = f.requests;
  j["p50_ms"] = Number(f.p50_ms);
  j["p95_ms"] = Number(f.p95_ms);
  j["p99_ms"] = Number(f.p99_ms);
  j["mean_ms"] = Number(f.mean_ms);
  j["svr"] = Number(f.svr);
  j["cold_starts"] = f.cold_starts;
  j["throughput_rps"] = Number(f.throughput_rps);
  j["completed"] = f.completed;
  j["dropped"] = f.dropped;
  j["vertical_scalings"] = f.vertical_scalings;
  j["rejected_actions"] = f.rejected_actions;
  j["held_gpu_seconds"] = Number(f.held_gpu_seconds);
  j["cost_usd"] = Number(f.cost_usd);
  j["cost_per_1k_requests_usd"] = Number(f.cost_per_1k_requests_usd);
  j["idle_memory_gib_s"] = Number(f.idle_memory_gib_s);
  j["cold_start_wait_s"] = Number(f.cold_start_wait_s);
  j["cold_start_ms_per_request"] = Number(f.cold_start_ms_per_request);
  j["parks"] = f.parks;
  j["unparks"] = f.unparks;
  if (names.IsTraining(f.name)) {
    j["training_iters_per_s"] = Number(f.training_iters_per_s);
    j["jct_s"] = Number(f.jct_s);
  }
  if (f.theory_mean_ms.has_value()) j["theory_mean_ms"] = Number(*f.theory_mean_ms);
  if (const FunctionProfile* p = names.Profile(f.name)) j["profile"] = ProfileJson(*p);
  if (!f.sweep_svr.empty()) j["slo_sweep"] = SweepJson(names, f);
  return j;
}

// Requests-weighted SLO violation rate over the inference functions of a run.
double OverallSvr(const RunResult& run) {
  double violations = 0;
  int64_t requests = 0;
  for (const FunctionResult& f : run.functions) {
    violations += f.svr * static_cast<double>(f.requests);
    requests += f.requests;
  }
  return requests == 0 ? 0 : violations / static_cast<double>(requests);
}

int64_t TotalColdStarts(const RunResult& run) {
  int64_t n = 0;
  for (const FunctionResult& f : run.functions) n += f.cold_starts;
  return n;
}

int64_t TotalRequests(const RunResult& run) {
  int64_t n = 0;
  for (const FunctionResult& f : run.functions) n += f.requests;
  return n;
}

std::string ClusterLine(const SimConfig& config) {
  int64_t gpus = 0;
  for (const core::NodeSpec& n : config.cluster.nodes) gpus += n.gpu_count;
  return absl::StrFormat("%d nodes, %d GPUs", config.cluster.nodes.size(), gpus);
}

void AppendFunctionRows(const SimConfig& config, const RunResult& run, int width,
                        std::string& out) {
  const Names names(config, {});
  absl::StrAppendFormat(&out, "  %-*s %9s %9s %9s %9s %7s %6s %5s %9s %9s\n", width, "function",
                        "requests", "p50 ms", "p95 ms", "p99 ms", "SVR %", "cold", "vert",
                        "thru rps", "$/1K req");
  for (const FunctionResult& f : run.functions) {
    if (names.IsTraining(f.name)) {
      const std::string jct =
          f.jct_s > 0 ? absl::StrFormat("JCT %.1f s", f.jct_s) : std::string("unfinished");
      absl::StrAppendFormat(&out, "  %-*s training: %.3f iterations/s, %s, %d cold starts, $%.4f\n",
                            width, f.name, f.training_iters_per_s, jct, f.cold_starts, f.cost_usd);
      continue;
    }
    absl::StrAppendFormat(&out, "  %-*s %9d %9.2f %9.2f %9.2f %7.2f %6d %5d %9.2f %9.4f\n", width,
                          f.name, f.requests, f.p50_ms, f.p95_ms, f.p99_ms, 100 * f.svr,
                          f.cold_starts, f.vertical_scalings, f.throughput_rps,
                          f.cost_per_1k_requests_usd);
    if (f.dropped > 0) absl::StrAppendFormat(&out, "  %-*s %9d dropped\n", width, "", f.dropped);
    if (f.theory_mean_ms.has_value()) {
      absl::StrAppendFormat(&out, "  %-*s mean %.3f ms, M/M/1 theory %.3f ms (%+.2f %%)\n", width,
                            "", f.mean_ms, *f.theory_mean_ms,
                            100 * (f.mean_ms / *f.theory_mean_ms - 1));
    }
  }
}

// One line per function whose quota the profiler chose.
void AppendProfiles(const SimConfig& config, std::span<const ProfiledFunction> profiles,
                    int width, std::string& out) {
  const Names names(config, {});
  for (const ProfiledFunction& pf : profiles) {
    const FunctionProfile& p = pf.profile;
    absl::StrAppendFormat(&out, "profiled %-*s request %.2f, limit %.2f", width, pf.function,
                          p.quota.request, p.quota.limit);
    if (names.IsTraining(pf.function)) {
      absl::StrAppendFormat(&out, " (training), %d trial%s\n", p.trials, p.trials == 1 ? "" : "s");
    } else {
      absl::StrAppendFormat(&out, ", batch %d, %.1f req/s per instance, %d trial%s\n", p.batch,
                            p.capacity_rps, p.trials, p.trials == 1 ? "" : "s");
    }
  }
}

void AppendComparison(std::span<const RunResult> runs, std::string& out) {
  size_t pw = 6, ww = 8;
  for (const RunResult& r : runs) {
    pw = std::max(pw, r.policy.size());
    ww = std::max(ww, r.workload.size());
  }
  const int p = static_cast<int>(pw), w = static_cast<int>(ww);
  absl::StrAppendFormat(&out, "\nsummary\n  %-*s %-*s %12s %9s %9s %7s %6s %10s %9s\n", p, "policy",
                        w, "workload", "GPU-seconds", "mean GPUs", "peak GPUs", "SVR %", "cold",
                        "cost $", "$/1K req");
  for (const RunResult& r : runs) {
    absl::StrAppendFormat(&out, "  %-*s %-*s %12.1f %9.2f %9d %7.2f %6d %10.4f %9.4f\n", p,
                          r.policy, w, r.workload, r.gpu_seconds, r.mean_active_gpus,
                          r.peak_active_gpus, 100 * OverallSvr(r), TotalColdStarts(r), r.cost_usd,
                          r.cost_per_1k_requests_usd);
  }
  absl::StrAppendFormat(&out, "  %-*s %-*s %12s %12s\n", p, "", w, "", "idle GiB-h", "cold ms/req");
  for (const RunResult& r : runs) {
    absl::StrAppendFormat(&out, "  %-*s %-*s %12.1f %12.3f\n", p, r.policy, w, r.workload,
                          r.idle_memory_gib_s / 3600, r.cold_start_ms_per_request);
  }
}

}  // namespace

Json RunJson(const SimConfig& config, const RunResult& run,
             std::span<const ProfiledFunction> profiles) {
  Json j;
  j["policy"] = run.policy;
  j["workload"] = run.workload;
  j["gpu_seconds"] = Number(run.gpu_seconds);
  j["held_gpu_seconds"] = Number(run.held_gpu_seconds);
  j["cost_usd"] = Number(run.cost_usd);
  j["cost_per_1k_requests_usd"] = Number(run.cost_per_1k_requests_usd);
  j["peak_active_gpus"] = run.peak_active_gpus;
  j["mean_active_gpus"] = Number(run.mean_active_gpus);
  j["sm_fragmentation"] = Number(run.sm_fragmentation);
  j["mem_fragmentation"] = Number(run.mem_fragmentation);
  j["fgd_fragmentation"] = Number(run.fgd_fragmentation);
  j["events"] = run.events;
  j["svr"] = Number(OverallSvr(run));
  j["requests"] = TotalRequests(run);
  j["cold_starts"] = TotalColdStarts(run);
  j["idle_memory_gib_s"] = Number(run.idle_memory_gib_s);
  j["cold_start_wait_s"] = Number(run.cold_start_wait_s);
  j["cold_start_ms_per_request"] = Number(run.cold_start_ms_per_request);
  Json functions = Json::array();
  const Names names(config, profiles);
  for (const FunctionResult& f : run.functions) functions.push_back(FunctionJson(names, f));
  j["functions"] = std::move(functions);
  if (!run.pipelines.empty()) j["pipelines"] = PipelinesJson(config, run);
  return j;
}

Json SummaryJson(const SimConfig& config, std::span<const RunResult> runs,
                 std::span<const ProfiledFunction> profiles) {
  Json j;
  j["experiment"] = config.experiment;
  j["seed"] = config.seed;
  Json list = Json::array();
  for (const RunResult& r : runs) list.push_back(RunJson(config, r, profiles));
  j["runs"] = std::move(list);
  return j;
}

std::string SummaryJsonText(const SimConfig& config, std::span<const RunResult> runs,
                            std::span<const ProfiledFunction> profiles) {
  return SummaryJson(config, runs, profiles).dump(2) + "\n";
}

std::string SummaryTable(const SimConfig& config, std::span<const RunResult> runs,
                         std::span<const ProfiledFunction> profiles) {
  std::string out = absl::StrFormat(
      "experiment %s: seed %d, horizon %g s, %s, %d functions, %d runs\n", config.experiment,
      config.seed, absl::ToDoubleSeconds(config.horizon), ClusterLine(config),
      config.functions.size(), runs.size());
  size_t width = 8;
  for (const FunctionConfig& f : config.functions) width = std::max(width, f.name.size());
  AppendProfiles(config, profiles, static_cast<int>(width), out);
  for (const RunResult& r : runs) {
    absl::StrAppendFormat(&out, "\npolicy %s, workload %s\n", r.policy, r.workload);
    absl::StrAppendFormat(&out, "  GPU-seconds %.1f | active GPUs peak %d, mean %.2f | %d events\n",
                          r.gpu_seconds, r.peak_active_gpus, r.mean_active_gpus, r.events);
    absl::StrAppendFormat(&out, "  fragmentation SM %.3f, memory %.3f, FGD %.3f\n",
                          r.sm_fragmentation, r.mem_fragmentation, r.fgd_fragmentation);
    absl::StrAppendFormat(&out, "  cost $%.4f for %.1f GPU-seconds held | $%.4f per 1K requests\n",
                          r.cost_usd, r.held_gpu_seconds, r.cost_per_1k_requests_usd);
    absl::StrAppendFormat(&out, "  idle instances held %.1f GiB-hours | cold-start wait %.3f ms per "
                          "request (%.1f s in all)\n",
                          r.idle_memory_gib_s / 3600, r.cold_start_ms_per_request,
                          r.cold_start_wait_s);
    AppendFunctionRows(config, r, static_cast<int>(width), out);
    AppendPipelineTables(config, r, out);
  }
  if (runs.size() > 1) AppendComparison(runs, out);
  AppendPipelineComparison(config, runs, out);
  return out;
}

std::string TimelineCsv(const SimConfig& config, const RunResult& run) {
  std::string out = "t_s,active_gpus,allocated_share,sm_fragmentation,mem_fragmentation,cost_usd";
  // Per-function columns only for fleets the engine samples per function (kTimelineFunctionColumns).
  const size_t n = config.functions.size() <= kTimelineFunctionColumns ? config.functions.size() : 0;
  for (size_t i = 0; i < n; ++i) absl::StrAppend(&out, ",", config.functions[i].name, "_instances");
  for (size_t i = 0; i < n; ++i) absl::StrAppend(&out, ",", config.functions[i].name, "_rps");
  out += "\n";
  for (const TimelineRow& row : run.timeline) {
    absl::StrAppendFormat(&out, "%.6f,%d,%.6g,%.6g,%.6g,%.6g", row.t_s, row.active_gpus,
                          row.allocated_share, row.sm_fragmentation, row.mem_fragmentation,
                          row.cost_usd);
    for (size_t i = 0; i < n; ++i) {
      absl::StrAppend(&out, ",", i < row.instances.size() ? row.instances[i] : 0);
    }
    for (size_t i = 0; i < n; ++i) {
      absl::StrAppendFormat(&out, ",%.6g", i < row.rps.size() ? row.rps[i] : 0.0);
    }
    out += "\n";
  }
  return out;
}

std::string SummaryCsv(std::span<const RunResult> runs) {
  std::string out =
      "policy,workload,requests,svr,cold_starts,mean_active_gpus,peak_active_gpus,gpu_seconds,"
      "held_gpu_seconds,cost_usd,cost_per_1k_requests_usd,idle_memory_gib_s,cold_start_wait_s,"
      "cold_start_ms_per_request,events\n";
  for (const RunResult& r : runs) {
    absl::StrAppendFormat(&out, "%s,%s,%d,%.9g,%d,%.9g,%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%d\n",
                          r.policy, r.workload, TotalRequests(r), OverallSvr(r),
                          TotalColdStarts(r), r.mean_active_gpus, r.peak_active_gpus,
                          r.gpu_seconds, r.held_gpu_seconds, r.cost_usd,
                          r.cost_per_1k_requests_usd, r.idle_memory_gib_s, r.cold_start_wait_s,
                          r.cold_start_ms_per_request, r.events);
  }
  return out;
}

std::string TimelineFileName(const RunResult& run) {
  return absl::StrCat(run.policy, "_", run.workload, "_timeline.csv");
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (out) out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write: ",
                                                            std::strerror(errno)));
  return absl::OkStatus();
}

absl::Status CreateOutputDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  return absl::OkStatus();
}

absl::Status WriteOutputDir(const std::string& dir, const SimConfig& config,
                            std::span<const RunResult> runs,
                            std::span<const ProfiledFunction> profiles) {
  SLUICE_RETURN_IF_ERROR(CreateOutputDir(dir));
  const std::filesystem::path base(dir);
  SLUICE_RETURN_IF_ERROR(WriteTextFile((base / "summary.json").string(),
                                       SummaryJsonText(config, runs, profiles)));
  SLUICE_RETURN_IF_ERROR(WriteTextFile((base / "summary.csv").string(), SummaryCsv(runs)));
  for (const RunResult& r : runs) {
    SLUICE_RETURN_IF_ERROR(
        WriteTextFile((base / TimelineFileName(r)).string(), TimelineCsv(config, r)));
  }
  return absl::OkStatus();
}

}  // namespace sluice::sim
