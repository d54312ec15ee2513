// What the experiment report draws, read back from a `sluice sim run --out DIR` directory: its
// summary.json and each run's timeline CSV (simulation, `kind: llm_serving` and
// `kind: placement_replay` layouts; keys in docs/experiments.md). Used by html_report.h for
// `sim run --out` and `sim plot`. Plain data and pure parsing except LoadReportDir, which reads
// files. Thread-compatible.
#ifndef SLUICE_SIM_REPORT_REPORT_DATA_H_
#define SLUICE_SIM_REPORT_REPORT_DATA_H_

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::sim {

// A timeline CSV, column-major: values[c][r] is column c of data row r.
struct Timeline {
  std::vector<std::string> columns;  // header names; columns[0] is the time column (t_s)
  std::vector<std::vector<double>> values;

  // Index of `name` in columns, or -1.
  int Column(std::string_view name) const;
};

struct ReportFunction {
  std::string name;
  double requests = 0;
  // Latency percentiles in header order, e.g. {"p50_ms", 12.0}, or {"ttft_p99_ms", ...} for LLMs.
  std::vector<std::pair<std::string, double>> latency_ms;
  std::optional<double> cold_starts;  // simulation: cold_starts; llm: scale_outs
  std::optional<double> svr;          // fraction of requests violating the SLO
};

struct ReportRun {
  std::string policy;
  std::string workload;       // "" for llm_serving runs (one workload per file)
  std::string timeline_file;  // file name inside the directory
  Timeline timeline;
  std::vector<ReportFunction> functions;
  double gpu_seconds = 0;
  double cost_usd = 0;
  double mean_gpus = 0;
  // Requests-weighted SLO violation rate over the functions with one; unset when none has one
  // (placement replays). LLM runs: 1 - slo_attainment.
  std::optional<double> svr;

  // "policy" or "policy / workload" when the experiment has workload variants.
  std::string Label(bool with_workload) const;
};

struct ReportData {
  std::string dir;
  std::string experiment;
  std::string kind;  // "simulation", "llm_serving" or "placement_replay"
  std::vector<ReportRun> runs;

  // True when the runs differ in workload (labels then name it).
  bool MultipleWorkloads() const;
};

// Functions drawn per chart when a run has more (the ones with the most requests).
inline constexpr int kReportTopFunctions = 8;

// Parses a timeline CSV. `path` names the file in errors: "PATH:LINE: ..." for a row with the
// wrong number of fields or a non-numeric value (empty fields and "nan" read as NaN). When
// `keep` is given, only the columns it accepts (and t_s) are stored; the others are skipped
// unparsed (long-tail runs have two columns per function).
absl::StatusOr<Timeline> ParseTimelineCsv(
    std::string_view text, const std::string& path,
    const std::function<bool(std::string_view column)>& keep = nullptr);

// Parses summary.json text; `path` names the file in errors. `timeline_of(run)` is not read here:
// each run's timeline_file is set and its Timeline left empty.
absl::StatusOr<ReportData> ParseSummaryJson(std::string_view text, const std::string& path);

// Reads DIR/summary.json and each run's timeline CSV, keeping the per-function columns
// (`<name>_instances`, `<name>_rps`) of the kReportTopFunctions functions with the most requests
// only. Errors (InvalidArgument / NotFound /
// DataLoss) name the file: a missing directory or file, malformed JSON, a summary without runs,
// a malformed CSV row (with its line).
absl::StatusOr<ReportData> LoadReportDir(const std::string& dir);

// Indices of the points not dominated by another point when both coordinates are minimised
// (a point dominates another when it is <= in both and < in one). Non-finite points are never on
// the front. Ties (identical points) are all on the front.
std::vector<bool> ParetoFront(std::span<const std::pair<double, double>> points);

// ParetoFront within each workload of `data` (points parallel to data.runs): policies are
// compared under the same workload only.
std::vector<bool> WorkloadFronts(const ReportData& data,
                                 std::span<const std::pair<double, double>> points);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_REPORT_REPORT_DATA_H_
