// Reading an --out directory back. nlohmann-json is used in its non-throwing form (parse with
// allow_exceptions = false, every access checked by type first).
#include "sim/report/report_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "sim/workload/file_io.h"

namespace sluice::sim {
namespace {

using Json = nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double NumberAt(const Json& j, const char* key, double fallback = kNaN) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string StringAt(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool IsLatencyKey(const std::string& key) {
  return absl::EndsWith(key, "_ms") &&
         (absl::StrContains(key, "p50") || absl::StrContains(key, "p95") ||
          absl::StrContains(key, "p99"));
}

ReportFunction ParseFunction(const Json& f, const std::string& kind) {
  ReportFunction out;
  out.name = StringAt(f, "name");
  out.requests = NumberAt(f, "requests", 0);
  for (auto it = f.begin(); it != f.end(); ++it) {
    if (IsLatencyKey(it.key())) out.latency_ms.emplace_back(it.key(), NumberAt(f, it.key().c_str()));
  }
  const double cold = NumberAt(f, kind == "llm_serving" ? "scale_outs" : "cold_starts");
  if (std::isfinite(cold)) out.cold_starts = cold;
  if (kind == "llm_serving") {
    const double att = NumberAt(f, "slo_attainment");
    if (std::isfinite(att)) out.svr = 1 - att;
  } else {
    const double svr = NumberAt(f, "svr");
    if (std::isfinite(svr)) out.svr = svr;
  }
  return out;
}

std::optional<double> WeightedSvr(const std::vector<ReportFunction>& functions) {
  double violations = 0, requests = 0;
  bool any = false;
  for (const ReportFunction& f : functions) {
    if (!f.svr.has_value()) continue;
    any = true;
    violations += *f.svr * f.requests;
    requests += f.requests;
  }
  if (!any) return std::nullopt;
  return requests > 0 ? violations / requests : 0.0;
}

absl::Status RunError(const std::string& path, size_t i, const std::string& field,
                      const std::string& message) {
  return common::InputError({path, 0}, absl::StrCat("runs[", i, "].", field), message);
}

}  // namespace

int Timeline::Column(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string ReportRun::Label(bool with_workload) const {
  return with_workload && !workload.empty() ? absl::StrCat(policy, " / ", workload) : policy;
}

bool ReportData::MultipleWorkloads() const {
  for (const ReportRun& r : runs) {
    if (r.workload != runs.front().workload) return true;
  }
  return false;
}

absl::StatusOr<Timeline> ParseTimelineCsv(std::string_view text, const std::string& path,
                                          const std::function<bool(std::string_view)>& keep) {
  Timeline t;
  std::vector<int> slot;  // per CSV field: its index in t.columns, or -1 when skipped
  size_t fields_per_row = 0;
  int line_no = 0;
  // Debian's Abseil has its own string_view type; split and parse with it.
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields_per_row == 0) {
      fields_per_row = fields.size();
      for (size_t c = 0; c < fields.size(); ++c) {
        const std::string name(absl::StripAsciiWhitespace(fields[c]));
        if (c == 0 && name != "t_s") {
          return common::InputError({path, line_no}, "t_s", "the first column must be t_s");
        }
        const bool kept = c == 0 || !keep || keep(name);
        slot.push_back(kept ? static_cast<int>(t.columns.size()) : -1);
        if (kept) t.columns.push_back(name);
      }
      t.values.resize(t.columns.size());
      continue;
    }
    if (fields.size() != fields_per_row) {
      return common::InputError({path, line_no}, "row",
                                absl::StrCat("expected ", fields_per_row, " values, got ",
                                             fields.size()));
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      if (slot[c] < 0) continue;
      const absl::string_view f = absl::StripAsciiWhitespace(fields[c]);
      double v = kNaN;
      if (!f.empty() && f != "nan" && f != "null" && !absl::SimpleAtod(f, &v)) {
        return common::InputError({path, line_no}, t.columns[static_cast<size_t>(slot[c])],
                                  absl::StrCat("not a number: '", f, "'"));
      }
      t.values[static_cast<size_t>(slot[c])].push_back(v);
    }
  }
  if (t.columns.empty()) return common::InputError({path, 0}, "header", "empty file");
  return t;
}

namespace {

// Keeps every column except the per-function ones of functions outside the top by requests.
std::function<bool(std::string_view)> TopFunctionColumns(const ReportRun& run) {
  if (run.functions.size() <= static_cast<size_t>(kReportTopFunctions)) return nullptr;
  std::vector<const ReportFunction*> fs;
  for (const ReportFunction& f : run.functions) fs.push_back(&f);
  std::stable_sort(fs.begin(), fs.end(), [](const ReportFunction* a, const ReportFunction* b) {
    return a->requests > b->requests;
  });
  auto all = std::make_shared<absl::flat_hash_set<std::string>>();
  auto top = std::make_shared<absl::flat_hash_set<std::string>>();
  for (size_t i = 0; i < fs.size(); ++i) {
    all->insert(fs[i]->name);
    if (i < static_cast<size_t>(kReportTopFunctions)) top->insert(fs[i]->name);
  }
  return [all, top](std::string_view column) {
    for (std::string_view suffix : {"_instances", "_rps"}) {
      if (!column.ends_with(suffix)) continue;
      const std::string name(column.substr(0, column.size() - suffix.size()));
      if (all->contains(name)) return top->contains(name);
    }
    return true;
  };
}

}  // namespace

absl::StatusOr<ReportData> ParseSummaryJson(std::string_view text, const std::string& path) {
  const Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return common::InputError({path, 0}, "summary", "not a JSON object");
  }
  ReportData data;
  data.experiment = StringAt(j, "experiment");
  data.kind = StringAt(j, "kind");
  if (data.kind.empty()) data.kind = "simulation";
  const auto runs = j.find("runs");
  if (runs == j.end() || !runs->is_array() || runs->empty()) {
    return common::InputError({path, 0}, "runs", "missing or empty");
  }
  for (size_t i = 0; i < runs->size(); ++i) {
    const Json& r = (*runs)[i];
    ReportRun run;
    run.policy = StringAt(r, "policy");
    if (run.policy.empty()) return RunError(path, i, "policy", "missing");
    run.workload = StringAt(r, "workload");
    run.timeline_file = run.workload.empty() ? absl::StrCat(run.policy, "_timeline.csv")
                                             : absl::StrCat(run.policy, "_", run.workload,
                                                            "_timeline.csv");
    run.gpu_seconds = NumberAt(r, "gpu_seconds", 0);
    run.cost_usd = NumberAt(r, "cost_usd", 0);
    run.mean_gpus = NumberAt(r, data.kind == "llm_serving" ? "mean_gpus" : "mean_active_gpus", 0);
    const auto fs = r.find("functions");
    if (fs != r.end() && fs->is_array()) {
      for (const Json& f : *fs) run.functions.push_back(ParseFunction(f, data.kind));
    }
    run.svr = WeightedSvr(run.functions);
    data.runs.push_back(std::move(run));
  }
  return data;
}

absl::StatusOr<ReportData> LoadReportDir(const std::string& dir) {
  const std::filesystem::path base(dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(base, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such directory"));
  }
  const std::string summary_path = (base / "summary.json").string();
  SLUICE_ASSIGN_OR_RETURN(const std::string summary, ReadFileMaybeXz(summary_path));
  SLUICE_ASSIGN_OR_RETURN(ReportData data, ParseSummaryJson(summary, summary_path));
  data.dir = dir;
  for (ReportRun& run : data.runs) {
    const std::string path = (base / run.timeline_file).string();
    SLUICE_ASSIGN_OR_RETURN(const std::string csv, ReadFileMaybeXz(path));
    SLUICE_ASSIGN_OR_RETURN(run.timeline, ParseTimelineCsv(csv, path, TopFunctionColumns(run)));
  }
  return data;
}

std::vector<bool> WorkloadFronts(const ReportData& data,
                                 std::span<const std::pair<double, double>> points) {
  std::vector<bool> front(points.size(), false);
  std::vector<bool> done(points.size(), false);
  for (size_t i = 0; i < points.size() && i < data.runs.size(); ++i) {
    if (done[i]) continue;
    std::vector<size_t> members;
    std::vector<std::pair<double, double>> group;
    for (size_t k = i; k < points.size() && k < data.runs.size(); ++k) {
      if (data.runs[k].workload != data.runs[i].workload) continue;
      members.push_back(k);
      group.push_back(points[k]);
      done[k] = true;
    }
    const std::vector<bool> f = ParetoFront(group);
    for (size_t m = 0; m < members.size(); ++m) front[members[m]] = f[m];
  }
  return front;
}

std::vector<bool> ParetoFront(std::span<const std::pair<double, double>> points) {
  std::vector<bool> front(points.size(), false);
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [xi, yi] = points[i];
    if (!std::isfinite(xi) || !std::isfinite(yi)) continue;
    bool dominated = false;
    for (size_t k = 0; k < points.size() && !dominated; ++k) {
      const auto [xk, yk] = points[k];
      if (k == i || !std::isfinite(xk) || !std::isfinite(yk)) continue;
      dominated = xk <= xi && yk <= yi && (xk < xi || yk < yi);
    }
    front[i] = !dominated;
  }
  return front;
}

}  // namespace sluice::sim
