// The experiment report: DIR/report.html (one self-contained file: inline SVG and CSS, no
// scripts, no network) and DIR/pareto.svg, drawn from what `sluice sim run --out DIR` wrote
// (report_data.h). Used by `sim run --out` (after the CSVs are written) and `sim plot`. Pure
// rendering except the Write* functions, which write files. Thread-compatible.
#ifndef SLUICE_SIM_REPORT_HTML_REPORT_H_
#define SLUICE_SIM_REPORT_HTML_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/report/report_data.h"

namespace sluice::sim {

// Points per line at most; longer timelines are averaged over equal buckets of rows.
inline constexpr int kReportMaxPoints = 600;

// One chart of the report: `id` is its data-chart name (e.g. "run0-cluster", "pareto").
struct ReportChart {
  std::string id;
  std::string svg;  // inline <svg> element
};

// Every chart of the report, in page order: the comparison charts ("svr-vs-cost", "pareto";
// only when at least one run has an SLO violation rate), then per run k, each when its columns
// exist: "run<k>-cluster" (active GPUs, allocated share), "run<k>-instances", "run<k>-load",
// "run<k>-sm-share" (per instance; `sluice load --out`), other timeline columns grouped
// ("run<k>-fragmentation", "run<k>-cost", ... one per remaining column), and from the summary
// "run<k>-latency" (percentile bars) and "run<k>-cold-starts".
std::vector<ReportChart> ReportCharts(const ReportData& data);

// The whole HTML page (well-formed XML, no "http" anywhere).
std::string RenderReportHtml(const ReportData& data);

// The "pareto" chart (mean GPUs vs SLO violation rate, one point per run, front marked) as a
// standalone SVG file; "" when no run has an SLO violation rate.
std::string RenderParetoSvg(const ReportData& data);

// Loads DIR (LoadReportDir) and writes DIR/report.html and, when there is one, DIR/pareto.svg.
// Returns the path of report.html. Errors name the file that could not be read or written.
absl::StatusOr<std::string> WriteReport(const std::string& dir);

// Writes each chart of `data` as a standalone `<prefix><id>.svg` in `out_dir` (created when
// missing); for docs/figures. Returns the paths written.
absl::StatusOr<std::vector<std::string>> WriteChartFiles(const ReportData& data,
                                                         const std::string& out_dir,
                                                         const std::string& prefix);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_REPORT_HTML_REPORT_H_
