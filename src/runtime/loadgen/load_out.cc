// The --out files of `sluice load`. Column order is fixed by first appearance so that the same
// samples always give the same bytes.
#include "runtime/loadgen/load_out.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

absl::Status Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.close();
  if (!out) {
    return absl::PermissionDeniedError(
        absl::StrCat(path.string(), ": cannot write: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string LoadSummaryJson(const LoadReport& r) {
  nlohmann::ordered_json f;
  f["name"] = r.function;
  f["requests"] = r.sent;
  f["p50_ms"] = Ms(r.latency.p50);
  f["p95_ms"] = Ms(r.latency.p95);
  f["p99_ms"] = Ms(r.latency.p99);
  f["svr"] = r.svr;
  if (r.cold_starts.has_value()) f["cold_starts"] = *r.cold_starts;
  nlohmann::ordered_json run;
  run["policy"] = r.function;
  run["seconds"] = absl::ToDoubleSeconds(r.duration);
  run["sent"] = r.sent;
  run["ok"] = r.ok;
  run["functions"] = nlohmann::ordered_json::array({f});
  nlohmann::ordered_json j;
  j["experiment"] = absl::StrCat("sluice load ", r.function);
  j["kind"] = "load";
  j["runs"] = nlohmann::ordered_json::array({run});
  return j.dump(2) + "\n";
}

std::string LoadTimelineCsv(const LoadReport& r) {
  std::vector<std::string> functions, instances;  // instance columns: "<function>-<id>"
  for (const TimelineSample& s : r.timeline) {
    for (const FunctionSample& f : s.functions) {
      if (std::find(functions.begin(), functions.end(), f.name) == functions.end()) {
        functions.push_back(f.name);
      }
      for (const InstanceSample& i : f.instances) {
        const std::string key = absl::StrCat(f.name, "-", i.id);
        if (std::find(instances.begin(), instances.end(), key) == instances.end()) {
          instances.push_back(key);
        }
      }
    }
  }
  std::string out = "t_s";
  for (const std::string& f : functions) absl::StrAppend(&out, ",", f, "_instances");
  for (const std::string& i : instances) absl::StrAppend(&out, ",", i, "_sm_share");
  out += "\n";
  for (const TimelineSample& s : r.timeline) {
    std::map<std::string, size_t> count;
    std::map<std::string, double> share;
    for (const FunctionSample& f : s.functions) {
      count[f.name] = f.instances.size();
      for (const InstanceSample& i : f.instances) share[absl::StrCat(f.name, "-", i.id)] = i.sm_share;
    }
    absl::StrAppendFormat(&out, "%.3f", absl::ToDoubleSeconds(s.at));
    for (const std::string& f : functions) absl::StrAppend(&out, ",", count[f]);
    for (const std::string& i : instances) {
      const auto it = share.find(i);
      out += it == share.end() ? "," : absl::StrFormat(",%.4g", it->second);
    }
    out += "\n";
  }
  return out;
}

absl::Status WriteLoadOutputDir(const std::string& dir, const LoadReport& report) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat(dir, ": cannot create: ", ec.message()));
  const std::filesystem::path base(dir);
  if (absl::Status s = Write(base / "summary.json", LoadSummaryJson(report)); !s.ok()) return s;
  return Write(base / absl::StrCat(report.function, "_timeline.csv"), LoadTimelineCsv(report));
}

}  // namespace sluice::runtime
