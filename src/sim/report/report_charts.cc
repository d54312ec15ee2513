// Which charts a report holds and how each is built from ReportData (ReportCharts in
// html_report.h). Kept apart from the page layout (html_report.cc).
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "sim/report/html_report.h"
#include "sim/report/svg_chart.h"

namespace sluice::sim {
namespace {

struct TimeAxis {
  double divisor = 1;
  std::string label = "simulated time (s)";
};

TimeAxis AxisFor(const Timeline& t) {
  double end = 0;
  for (double x : t.values.front()) {
    if (std::isfinite(x)) end = std::max(end, x);
  }
  if (end >= 3 * 3600) return {3600, "simulated time (h)"};
  if (end >= 600) return {60, "simulated time (min)"};
  return {};
}

// Bucket means so that no line has more than kReportMaxPoints points.
std::vector<double> Downsample(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n <= static_cast<size_t>(kReportMaxPoints)) return v;
  std::vector<double> out;
  for (size_t b = 0; b < static_cast<size_t>(kReportMaxPoints); ++b) {
    const size_t lo = b * n / kReportMaxPoints, hi = (b + 1) * n / kReportMaxPoints;
    double sum = 0;
    size_t count = 0;
    for (size_t i = lo; i < hi; ++i) {
      if (std::isfinite(v[i])) {
        sum += v[i];
        ++count;
      }
    }
    out.push_back(count > 0 ? sum / static_cast<double>(count) : NAN);
  }
  return out;
}

LineSeries SeriesOf(const Timeline& t, size_t column, const TimeAxis& axis, std::string name) {
  LineSeries s{std::move(name), Downsample(t.values.front()), Downsample(t.values[column])};
  for (double& x : s.x) x /= axis.divisor;
  return s;
}

double MeanOf(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += std::isfinite(x) ? x : 0;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// Columns ending in `suffix`, the kReportTopFunctions with the most requests (functions named by
// the column prefix) or, for columns that name no function, the largest mean.
std::vector<size_t> TopColumns(const ReportRun& run, const std::vector<size_t>& columns,
                               const std::string& suffix) {
  struct Ranked {
    bool function;  // columns of a function in the summary rank above the rest
    double key;     // its requests, else the column's mean
    size_t column;
  };
  std::vector<Ranked> ranked;
  for (size_t c : columns) {
    const std::string& col = run.timeline.columns[c];
    const std::string prefix = col.substr(0, col.size() - suffix.size());
    Ranked r{false, MeanOf(run.timeline.values[c]), c};
    for (const ReportFunction& f : run.functions) {
      if (f.name == prefix) r = {true, f.requests, c};
    }
    ranked.push_back(r);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.function != b.function ? a.function : a.key > b.key;
  });
  std::vector<size_t> out;
  for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(kReportTopFunctions); ++i) {
    out.push_back(ranked[i].column);
  }
  return out;
}

std::string TopNote(size_t shown, size_t total) {
  return shown < total ? absl::StrCat("top ", shown, " of ", total, " functions by requests") : "";
}

// Per-function columns of the functions outside the top were not loaded (report_data.h), so the
// total is the larger of the columns seen and the functions in the summary.
size_t Total(const ReportRun& run, const std::vector<size_t>& columns) {
  return std::max(columns.size(), run.functions.size());
}

std::string Pretty(const std::string& column) { return absl::StrReplaceAll(column, {{"_", " "}}); }

// A line chart of `columns`, one series each; `strip` is removed from series names.
ReportChart LineChartOf(const ReportRun& run, const std::string& id, const std::string& title,
                        const std::string& y_label, const std::vector<size_t>& columns,
                        const std::string& strip, const std::string& note) {
  const TimeAxis axis = AxisFor(run.timeline);
  LineChartSpec spec{id, title, axis.label, y_label, note, {}};
  for (size_t c : columns) {
    std::string name = run.timeline.columns[c];
    if (!strip.empty() && absl::EndsWith(name, strip)) name.resize(name.size() - strip.size());
    spec.series.push_back(SeriesOf(run.timeline, c, axis, name));
  }
  return {id, RenderLineChart(spec)};
}

void AddTimelineCharts(const ReportRun& run, const std::string& p, std::vector<ReportChart>& out) {
  const Timeline& t = run.timeline;
  std::vector<size_t> cluster, instances, rps, tokens, frag, shares, rest;
  for (size_t c = 1; c < t.columns.size(); ++c) {
    const std::string& col = t.columns[c];
    if (col == "active_gpus" || col == "allocated_share" || col == "gpus_busy") {
      cluster.push_back(c);
    } else if (absl::EndsWith(col, "_instances")) {
      instances.push_back(c);
    } else if (absl::EndsWith(col, "_rps")) {
      rps.push_back(c);
    } else if (absl::EndsWith(col, "_tokens_per_s")) {
      tokens.push_back(c);
    } else if (absl::EndsWith(col, "_sm_share")) {  // `sluice load --out`: one per instance
      shares.push_back(c);
    } else if (absl::EndsWith(col, "_fragmentation") || col == "sm_unrequested") {
      frag.push_back(c);
    } else {
      rest.push_back(c);
    }
  }
  if (!cluster.empty()) {
    out.push_back(LineChartOf(run, p + "cluster", "Active GPUs and allocated SM share", "GPUs",
                              cluster, "", ""));
  }
  if (!instances.empty()) {
    const std::vector<size_t> top = TopColumns(run, instances, "_instances");
    out.push_back(LineChartOf(run, p + "instances", "Instances per function", "instances", top,
                              "_instances", TopNote(top.size(), Total(run, instances))));
  }
  if (!rps.empty()) {
    const std::vector<size_t> top = TopColumns(run, rps, "_rps");
    out.push_back(LineChartOf(run, p + "load", "Load per function", "requests/s", top, "_rps",
                              TopNote(top.size(), Total(run, rps))));
  }
  if (!tokens.empty()) {
    out.push_back(LineChartOf(run, p + "load", "Load", "tokens/s", tokens, "_tokens_per_s", ""));
  }
  if (!shares.empty()) {
    const std::vector<size_t> top = TopColumns(run, shares, "_sm_share");
    out.push_back(LineChartOf(run, p + "sm-share", "SM share per instance", "share of the GPU",
                              top, "_sm_share",
                              top.size() < shares.size()
                                  ? absl::StrCat("top ", top.size(), " of ", shares.size(),
                                                 " instances by mean share")
                                  : ""));
  }
  if (!frag.empty()) {
    out.push_back(LineChartOf(run, p + "fragmentation", "Fragmentation", "fraction", frag, "", ""));
  }
  for (size_t c : rest) {
    const std::string& col = t.columns[c];
    const std::string id = col == "cost_usd" ? "cost" : absl::StrReplaceAll(col, {{"_", "-"}});
    const std::string title = col == "cost_usd" ? "Cumulative cost" : Pretty(col);
    out.push_back(LineChartOf(run, p + id, title, col == "cost_usd" ? "USD" : Pretty(col), {c},
                              "", ""));
  }
}

// The functions with the most requests, at most kReportTopFunctions.
std::vector<const ReportFunction*> TopFunctions(const ReportRun& run) {
  std::vector<const ReportFunction*> fs;
  for (const ReportFunction& f : run.functions) fs.push_back(&f);
  std::stable_sort(fs.begin(), fs.end(), [](const ReportFunction* a, const ReportFunction* b) {
    return a->requests > b->requests;
  });
  if (fs.size() > static_cast<size_t>(kReportTopFunctions)) fs.resize(kReportTopFunctions);
  return fs;
}

void AddSummaryCharts(const ReportRun& run, const std::string& p, std::vector<ReportChart>& out) {
  const std::vector<const ReportFunction*> top = TopFunctions(run);
  if (top.empty()) return;
  const std::string note = TopNote(top.size(), run.functions.size());
  BarChartSpec latency{p + "latency", "Latency percentiles", "ms", note, {}, {}};
  BarChartSpec cold{p + "cold-starts", "Cold starts", "cold starts", note, {}, {{"cold starts", {}}}};
  std::vector<std::string> keys;
  for (const ReportFunction* f : top) {
    for (const auto& [k, v] : f->latency_ms) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
  }
  for (const std::string& k : keys) latency.series.push_back({k.substr(0, k.size() - 3), {}});
  bool any_cold = false;
  for (const ReportFunction* f : top) {
    latency.categories.push_back(f->name);
    cold.categories.push_back(f->name);
    for (size_t i = 0; i < keys.size(); ++i) {
      double v = NAN;
      for (const auto& [k, x] : f->latency_ms) {
        if (k == keys[i]) v = x;
      }
      latency.series[i].values.push_back(v);
    }
    cold.series[0].values.push_back(f->cold_starts.value_or(NAN));
    any_cold = any_cold || f->cold_starts.has_value();
  }
  if (!keys.empty()) out.push_back({latency.id, RenderBarChart(latency)});
  if (any_cold) out.push_back({cold.id, RenderBarChart(cold)});
}

// Comparison charts need runs with an SLO; a `sluice load` directory holds one run and no GPU
// time, so it has none.
bool AnySvr(const ReportData& data) {
  if (data.kind == "load") return false;
  for (const ReportRun& r : data.runs) {
    if (r.svr.has_value()) return true;
  }
  return false;
}

ScatterChartSpec Comparison(const ReportData& data, bool pareto) {
  bool costed = false;
  for (const ReportRun& r : data.runs) costed = costed || r.cost_usd > 0;
  ScatterChartSpec spec;
  spec.id = pareto ? "pareto" : "svr-vs-cost";
  spec.title = pareto ? "Mean GPUs vs SLO violation rate"
                      : (costed ? "SLO violation rate vs cost" : "SLO violation rate vs GPU time");
  spec.x_label = pareto ? "mean active GPUs" : (costed ? "cost (USD)" : "GPU time (GPU-s)");
  spec.y_label = "SLO violation rate (%)";
  const bool by_workload = data.MultipleWorkloads();
  spec.note = by_workload ? "one point per run; Pareto front per workload; lower left is better"
                          : "one point per run; lower left is better";
  std::vector<std::pair<double, double>> xy;
  for (const ReportRun& r : data.runs) {
    const double x = pareto ? r.mean_gpus : (costed ? r.cost_usd : r.gpu_seconds);
    xy.emplace_back(x, r.svr.has_value() ? *r.svr * 100 : NAN);
  }
  const std::vector<bool> front = WorkloadFronts(data, xy);
  for (size_t i = 0; i < xy.size(); ++i) {
    spec.points.push_back({data.runs[i].Label(by_workload), xy[i].first, xy[i].second, front[i],
                           data.runs[i].workload});
  }
  return spec;
}

}  // namespace

std::vector<ReportChart> ReportCharts(const ReportData& data) {
  std::vector<ReportChart> out;
  if (AnySvr(data)) {
    out.push_back({"svr-vs-cost", RenderScatterChart(Comparison(data, false))});
    out.push_back({"pareto", RenderScatterChart(Comparison(data, true))});
  }
  for (size_t k = 0; k < data.runs.size(); ++k) {
    const std::string p = absl::StrCat("run", k, "-");
    if (!data.runs[k].timeline.columns.empty()) AddTimelineCharts(data.runs[k], p, out);
    AddSummaryCharts(data.runs[k], p, out);
  }
  return out;
}

std::string RenderParetoSvg(const ReportData& data) {
  if (!AnySvr(data)) return "";
  return StandaloneSvg(RenderScatterChart(Comparison(data, true)));
}

}  // namespace sluice::sim
