// Inline SVG charts for the experiment report (src/sim/report/html_report.h) and the figures in
// docs/figures: line charts over time, grouped bar charts and scatter plots with a marked Pareto
// front. Pure string formatting: no I/O, no fonts, no scripts, no external references, so the
// output is self-contained and byte-identical for identical input. Stateless and thread-safe.
#ifndef SLUICE_SIM_REPORT_SVG_CHART_H_
#define SLUICE_SIM_REPORT_SVG_CHART_H_

#include <string>
#include <string_view>
#include <vector>

namespace sluice::sim {

// One named line: y[i] at x[i] (same length). Non-finite values break the line.
struct LineSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

struct LineChartSpec {
  std::string id;       // data-chart attribute (a stable name tests and readers can find)
  std::string title;
  std::string x_label;  // with its unit, e.g. "time (s)"
  std::string y_label;
  std::string note;     // optional line under the title (e.g. "top 8 of 500 functions")
  std::vector<LineSeries> series;
};

// One bar per category in each series; categories share the x axis.
struct BarSeries {
  std::string name;
  std::vector<double> values;  // parallel to BarChartSpec::categories
};

struct BarChartSpec {
  std::string id;
  std::string title;
  std::string y_label;
  std::string note;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
};

// A labelled point; `on_front` points are drawn filled and joined by a front line, one line per
// `group` (e.g. per workload: policies are compared within a workload).
struct ScatterPoint {
  std::string label;
  double x = 0;
  double y = 0;
  bool on_front = false;
  std::string group;
};

struct ScatterChartSpec {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string note;
  std::vector<ScatterPoint> points;
};

// Each returns one `<svg class="chart" data-chart="ID" ...>` element with a `<title>`, axes with
// ticks, a legend and one `<g class="series" data-series="NAME">` per series (scatter: one per
// point). No xmlns attribute (inline SVG in HTML5 needs none); see StandaloneSvg.
std::string RenderLineChart(const LineChartSpec& spec);
std::string RenderBarChart(const BarChartSpec& spec);
std::string RenderScatterChart(const ScatterChartSpec& spec);

// `svg` (one of the above) as a standalone .svg file: XML declaration and the SVG namespace.
std::string StandaloneSvg(std::string_view svg);

// Escapes & < > " ' for XML text and attribute values.
std::string XmlEscape(std::string_view text);

// "Nice" axis ticks covering [lo, hi]: 1, 2 or 5 times a power of ten apart, at most about
// `max_ticks` of them, the first <= lo and the last >= hi. lo == hi gives a unit range.
std::vector<double> NiceTicks(double lo, double hi, int max_ticks);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_REPORT_SVG_CHART_H_
