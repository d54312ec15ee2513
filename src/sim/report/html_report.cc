// The report page: tables and the charts of report_charts.cc in sections. Written as XHTML-style
// markup (every element closed, attributes quoted) so that an XML parser can check it.
#include "sim/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "sim/experiment/report.h"
#include "sim/report/svg_chart.h"

namespace sluice::sim {
namespace {

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1500px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;"
    "text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}"
    ".charts{display:flex;flex-wrap:wrap;gap:8px}svg.chart{border:1px solid #eee;max-width:100%;"
    "height:auto}.muted{color:#666}";

// `digits` decimals; "-" for a missing (non-finite) value.
std::string Fixed(double v, int digits) {
  return std::isfinite(v) ? absl::StrFormat("%.*f", digits, v) : "-";
}

std::string Percent(const std::optional<double>& fraction) {
  return fraction.has_value() && std::isfinite(*fraction)
             ? absl::StrFormat("%.2f%%", *fraction * 100)
             : "-";
}

std::string Cell(const std::string& text) { return absl::StrCat("<td>", XmlEscape(text), "</td>"); }

std::string ChartsWithPrefix(const std::vector<ReportChart>& charts, const std::string& prefix) {
  std::string out = "<div class=\"charts\">";
  for (const ReportChart& c : charts) {
    const bool run_chart = absl::StartsWith(c.id, "run");
    if (prefix.empty() ? !run_chart : absl::StartsWith(c.id, prefix)) out += c.svg;
  }
  return out + "</div>";
}

std::string ComparisonTable(const ReportData& data) {
  std::vector<std::pair<double, double>> xy;
  for (const ReportRun& r : data.runs) xy.emplace_back(r.mean_gpus, r.svr.value_or(NAN));
  const std::vector<bool> front = WorkloadFronts(data, xy);
  std::string out = "<table><tr><th>run</th><th>SLO violation rate</th><th>GPU-seconds</th>"
                    "<th>cost (USD)</th><th>mean GPUs</th><th>Pareto front</th></tr>";
  for (size_t i = 0; i < data.runs.size(); ++i) {
    const ReportRun& r = data.runs[i];
    absl::StrAppend(&out, "<tr><td><a href=\"#run", i, "\">",
                    XmlEscape(r.Label(data.MultipleWorkloads())), "</a></td>",
                    Cell(Percent(r.svr)),
                    Cell(Fixed(r.gpu_seconds, 1)), Cell(Fixed(r.cost_usd, 4)),
                    Cell(Fixed(r.mean_gpus, 2)), Cell(front[i] ? "yes" : ""), "</tr>");
  }
  return out + "</table>";
}

std::string FunctionTable(const ReportRun& run) {
  if (run.functions.empty()) return "";
  std::vector<std::string> keys;
  for (const ReportFunction& f : run.functions) {
    for (const auto& [k, v] : f.latency_ms) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  std::string out = "<table><tr><th>function</th><th>requests</th>";
  for (const std::string& k : keys) absl::StrAppend(&out, "<th>", XmlEscape(k), "</th>");
  out += "<th>SLO violation rate</th><th>cold starts</th></tr>";
  size_t shown = 0;
  for (const ReportFunction& f : run.functions) {
    if (++shown > 20) break;
    absl::StrAppend(&out, "<tr>", Cell(f.name), Cell(Fixed(f.requests, 0)));
    for (const std::string& k : keys) {
      double v = NAN;
      for (const auto& [key, x] : f.latency_ms) {
        if (key == k) v = x;
      }
      out += Cell(Fixed(v, 1));
    }
    absl::StrAppend(&out, Cell(Percent(f.svr)),
                    Cell(Fixed(f.cold_starts.value_or(NAN), 0)), "</tr>");
  }
  out += "</table>";
  if (run.functions.size() > 20) {
    absl::StrAppend(&out, "<p class=\"muted\">first 20 of ", run.functions.size(),
                    " functions; all are in summary.json</p>");
  }
  return out;
}

}  // namespace

std::string RenderReportHtml(const ReportData& data) {
  const std::vector<ReportChart> charts = ReportCharts(data);
  const std::string title = absl::StrCat("Sluice report: ", data.experiment);
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>",
      XmlEscape(title), "</title><style>", kStyle, "</style></head><body><h1>", XmlEscape(title),
      "</h1><p class=\"muted\">", XmlEscape(data.kind), " experiment, ", data.runs.size(),
      " run(s); drawn from summary.json and the timeline CSVs beside this file (regenerate with "
      "<code>sluice sim plot DIR</code>). ",
      data.kind == "load"
          ? "Measured on the platform by <code>sluice load</code> (emulated GPUs unless the "
            "platform ran on a real device).</p>"
          : "Simulated figures, not GPU measurements.</p>");
  if (data.kind != "load") {
    out += "<h2 id=\"comparison\">Policy comparison</h2>";
    out += ComparisonTable(data);
    out += ChartsWithPrefix(charts, "");
  }
  for (size_t k = 0; k < data.runs.size(); ++k) {
    const ReportRun& r = data.runs[k];
    absl::StrAppend(&out, "<h2 id=\"run", k, "\">", XmlEscape(r.Label(true)), "</h2>",
                    "<p class=\"muted\">timeline: ", XmlEscape(r.timeline_file), "</p>",
                    FunctionTable(r), ChartsWithPrefix(charts, absl::StrCat("run", k, "-")));
  }
  return out + "</body></html>\n";
}

absl::StatusOr<std::string> WriteReport(const std::string& dir) {
  SLUICE_ASSIGN_OR_RETURN(const ReportData data, LoadReportDir(dir));
  const std::filesystem::path base(dir);
  const std::string path = (base / "report.html").string();
  SLUICE_RETURN_IF_ERROR(WriteTextFile(path, RenderReportHtml(data)));
  const std::string pareto = RenderParetoSvg(data);
  if (!pareto.empty()) {
    SLUICE_RETURN_IF_ERROR(WriteTextFile((base / "pareto.svg").string(), pareto));
  }
  return path;
}

absl::StatusOr<std::vector<std::string>> WriteChartFiles(const ReportData& data,
                                                         const std::string& out_dir,
                                                         const std::string& prefix) {
  SLUICE_RETURN_IF_ERROR(CreateOutputDir(out_dir));
  std::vector<std::string> paths;
  for (const ReportChart& c : ReportCharts(data)) {
    const std::string path =
        (std::filesystem::path(out_dir) / absl::StrCat(prefix, c.id, ".svg")).string();
    SLUICE_RETURN_IF_ERROR(WriteTextFile(path, StandaloneSvg(c.svg)));
    paths.push_back(path);
  }
  return paths;
}

}  // namespace sluice::sim
