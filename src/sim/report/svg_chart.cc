// SVG chart drawing. Coordinates are written with at most one decimal so that files stay small
// and identical input gives identical bytes.
#include "sim/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::sim {
namespace {

constexpr double kWidth = 720;
constexpr double kHeight = 320;
constexpr double kLeft = 70;
constexpr double kRight = 550;  // legend to the right of this
constexpr double kTop = 48;
constexpr double kBottom = 272;
constexpr int kMaxLegend = 12;

// Tableau 10: distinguishable and colour-blind-friendlier than the SVG defaults.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

const char* Color(size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

std::string Num(double v) { return absl::StrFormat("%.1f", v); }

// Tick labels: up to 4 significant digits, no trailing zeros.
std::string TickLabel(double v) {
  if (std::fabs(v) < 1e-12) return "0";
  return absl::StrFormat("%.4g", v);
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// Maps data ranges onto the plot area.
struct Frame {
  std::vector<double> xt, yt;  // ticks
  double X(double x) const {
    return kLeft + (x - xt.front()) / (xt.back() - xt.front()) * (kRight - kLeft);
  }
  double Y(double y) const {
    return kBottom - (y - yt.front()) / (yt.back() - yt.front()) * (kBottom - kTop);
  }
};

std::string Header(const std::string& id, const std::string& title, const std::string& note) {
  std::string out = absl::StrFormat(
      "<svg class=\"chart\" data-chart=\"%s\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
      "role=\"img\" font-family=\"sans-serif\" font-size=\"11\">",
      XmlEscape(id), kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&out, "<title>", XmlEscape(title), "</title>");
  absl::StrAppend(&out, "<rect width=\"", kWidth, "\" height=\"", kHeight, "\" fill=\"#fff\"/>");
  absl::StrAppend(&out, "<text x=\"", kLeft, "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">",
                  XmlEscape(title), "</text>");
  if (!note.empty()) {
    absl::StrAppend(&out, "<text x=\"", kLeft, "\" y=\"34\" fill=\"#555\">", XmlEscape(note),
                    "</text>");
  }
  return out;
}

// Grid lines, tick labels and axis titles. `x_labels` replaces numeric x tick labels (bars).
std::string Axes(const Frame& f, const std::string& x_label, const std::string& y_label,
                 bool numeric_x) {
  std::string out = "<g class=\"axes\" stroke=\"#ddd\">";
  for (double y : f.yt) {
    absl::StrAppend(&out, "<line x1=\"", Num(kLeft), "\" x2=\"", Num(kRight), "\" y1=\"",
                    Num(f.Y(y)), "\" y2=\"", Num(f.Y(y)), "\"/>");
  }
  out += "</g><g class=\"ticks\" fill=\"#333\">";
  for (double y : f.yt) {
    absl::StrAppend(&out, "<text x=\"", Num(kLeft - 6), "\" y=\"", Num(f.Y(y) + 4),
                    "\" text-anchor=\"end\">", TickLabel(y), "</text>");
  }
  if (numeric_x) {
    for (double x : f.xt) {
      absl::StrAppend(&out, "<text x=\"", Num(f.X(x)), "\" y=\"", Num(kBottom + 16),
                      "\" text-anchor=\"middle\">", TickLabel(x), "</text>");
    }
  }
  out += "</g>";
  absl::StrAppend(&out, "<line x1=\"", kLeft, "\" x2=\"", kRight, "\" y1=\"", kBottom, "\" y2=\"",
                  kBottom, "\" stroke=\"#333\"/>");
  absl::StrAppend(&out, "<text x=\"", Num((kLeft + kRight) / 2), "\" y=\"", Num(kHeight - 8),
                  "\" text-anchor=\"middle\">", XmlEscape(x_label), "</text>");
  absl::StrAppend(&out, "<text transform=\"translate(14 ", Num((kTop + kBottom) / 2),
                  ") rotate(-90)\" text-anchor=\"middle\">", XmlEscape(y_label), "</text>");
  return out;
}

std::string LegendEntry(size_t i, const std::string& name, bool line) {
  const double y = kTop + 4 + 16 * static_cast<double>(i);
  std::string out;
  if (line) {
    absl::StrAppend(&out, "<line x1=\"", kRight + 12, "\" x2=\"", kRight + 30, "\" y1=\"", Num(y),
                    "\" y2=\"", Num(y), "\" stroke=\"", Color(i), "\" stroke-width=\"2\"/>");
  } else {
    absl::StrAppend(&out, "<rect x=\"", kRight + 12, "\" y=\"", Num(y - 5), "\" width=\"18\" "
                    "height=\"10\" fill=\"", Color(i), "\"/>");
  }
  std::string label = name.size() > 22 ? absl::StrCat(name.substr(0, 21), "~") : name;
  absl::StrAppend(&out, "<text x=\"", kRight + 36, "\" y=\"", Num(y + 4), "\">",
                  XmlEscape(label), "</text>");
  return out;
}

std::string NoData(const std::string& id, const std::string& title, const std::string& note) {
  return absl::StrCat(Header(id, title, note), "<text x=\"", Num((kLeft + kRight) / 2), "\" y=\"",
                      Num((kTop + kBottom) / 2), "\" text-anchor=\"middle\" fill=\"#888\">",
                      "no data</text></svg>");
}

// The polyline(s) of one series, split where a value is not finite.
std::string Polylines(const Frame& f, const LineSeries& s, size_t color) {
  std::string out, points;
  auto flush = [&] {
    if (!points.empty()) {
      absl::StrAppend(&out, "<polyline fill=\"none\" stroke=\"", Color(color),
                      "\" stroke-width=\"1.5\" points=\"", points, "\"/>");
    }
    points.clear();
  };
  const size_t n = std::min(s.x.size(), s.y.size());
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
      flush();
      continue;
    }
    absl::StrAppend(&points, points.empty() ? "" : " ", Num(f.X(s.x[i])), ",", Num(f.Y(s.y[i])));
  }
  flush();
  return out;
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters are not allowed in XML 1.0; they never carry meaning here.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  if (hi - lo < 1e-12) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double raw = (hi - lo) / std::max(1, max_ticks - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  const double first = std::floor(lo / step) * step;
  for (double t = first; t < hi + step * 0.999; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  if (ticks.size() < 2) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string RenderLineChart(const LineChartSpec& spec) {
  Range xr, yr;
  for (const LineSeries& s : spec.series) {
    for (double x : s.x) xr.Add(x);
    for (double y : s.y) yr.Add(y);
  }
  if (xr.empty() || yr.empty()) return NoData(spec.id, spec.title, spec.note);
  Frame f{NiceTicks(xr.lo, xr.hi, 8), NiceTicks(std::min(0.0, yr.lo), yr.hi, 6)};
  std::string out = Header(spec.id, spec.title, spec.note);
  out += Axes(f, spec.x_label, spec.y_label, true);
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const LineSeries& s = spec.series[i];
    absl::StrAppend(&out, "<g class=\"series\" data-series=\"", XmlEscape(s.name), "\"><title>",
                    XmlEscape(s.name), "</title>", Polylines(f, s, i));
    if (i < kMaxLegend) out += LegendEntry(i, s.name, true);
    out += "</g>";
  }
  return out + "</svg>";
}

std::string RenderBarChart(const BarChartSpec& spec) {
  Range yr;
  for (const BarSeries& s : spec.series) {
    for (double v : s.values) yr.Add(v);
  }
  if (spec.categories.empty() || yr.empty()) return NoData(spec.id, spec.title, spec.note);
  Frame f{{0, 1}, NiceTicks(std::min(0.0, yr.lo), yr.hi, 6)};
  std::string out = Header(spec.id, spec.title, spec.note);
  out += Axes(f, "", spec.y_label, false);
  const double slot = (kRight - kLeft) / static_cast<double>(spec.categories.size());
  const double bar = slot * 0.8 / static_cast<double>(std::max<size_t>(1, spec.series.size()));
  for (size_t c = 0; c < spec.categories.size(); ++c) {
    const std::string& name = spec.categories[c];
    std::string label = name.size() > 14 ? absl::StrCat(name.substr(0, 13), "~") : name;
    absl::StrAppend(&out, "<text x=\"", Num(kLeft + slot * (static_cast<double>(c) + 0.5)),
                    "\" y=\"", Num(kBottom + 16), "\" text-anchor=\"middle\"><title>",
                    XmlEscape(name), "</title>", XmlEscape(label), "</text>");
  }
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const BarSeries& s = spec.series[i];
    absl::StrAppend(&out, "<g class=\"series\" data-series=\"", XmlEscape(s.name), "\" fill=\"",
                    Color(i), "\">");
    for (size_t c = 0; c < spec.categories.size() && c < s.values.size(); ++c) {
      const double v = s.values[c];
      if (!std::isfinite(v)) continue;
      const double x = kLeft + slot * (static_cast<double>(c) + 0.1) + bar * static_cast<double>(i);
      const double y0 = f.Y(0), y1 = f.Y(v);
      absl::StrAppend(&out, "<rect x=\"", Num(x), "\" y=\"", Num(std::min(y0, y1)), "\" width=\"",
                      Num(bar), "\" height=\"", Num(std::fabs(y0 - y1)), "\"><title>",
                      XmlEscape(spec.categories[c]), " ", XmlEscape(s.name), ": ", TickLabel(v),
                      "</title></rect>");
    }
    if (i < kMaxLegend) out += LegendEntry(i, s.name, false);
    out += "</g>";
  }
  return out + "</svg>";
}

std::string RenderScatterChart(const ScatterChartSpec& spec) {
  Range xr, yr;
  for (const ScatterPoint& p : spec.points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    xr.Add(p.x);
    yr.Add(p.y);
  }
  if (xr.empty()) return NoData(spec.id, spec.title, spec.note);
  Frame f{NiceTicks(std::min(0.0, xr.lo), xr.hi, 7), NiceTicks(std::min(0.0, yr.lo), yr.hi, 6)};
  std::string out = Header(spec.id, spec.title, spec.note);
  out += Axes(f, spec.x_label, spec.y_label, true);
  std::vector<ScatterPoint> front;
  for (const ScatterPoint& p : spec.points) {
    if (p.on_front && std::isfinite(p.x) && std::isfinite(p.y)) front.push_back(p);
  }
  std::stable_sort(front.begin(), front.end(), [](const ScatterPoint& a, const ScatterPoint& b) {
    return a.group != b.group ? a.group < b.group : a.x < b.x;
  });
  for (size_t lo = 0; lo < front.size();) {
    size_t hi = lo;
    std::string points;
    for (; hi < front.size() && front[hi].group == front[lo].group; ++hi) {
      absl::StrAppend(&points, points.empty() ? "" : " ", Num(f.X(front[hi].x)), ",",
                      Num(f.Y(front[hi].y)));
    }
    if (hi - lo > 1) {
      absl::StrAppend(&out, "<polyline class=\"front\" fill=\"none\" stroke=\"#333\" "
                      "stroke-dasharray=\"4 3\" points=\"", points, "\"/>");
    }
    lo = hi;
  }
  for (size_t i = 0; i < spec.points.size(); ++i) {
    const ScatterPoint& p = spec.points[i];
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    absl::StrAppend(&out, "<g class=\"series\" data-series=\"", XmlEscape(p.label), "\"",
                    p.on_front ? " data-front=\"1\"" : "", "><title>", XmlEscape(p.label), ": ",
                    TickLabel(p.x), ", ", TickLabel(p.y), p.on_front ? " (Pareto front)" : "",
                    "</title>");
    absl::StrAppend(&out, "<circle cx=\"", Num(f.X(p.x)), "\" cy=\"", Num(f.Y(p.y)),
                    "\" r=\"5\" stroke=\"", Color(i), "\" stroke-width=\"2\" fill=\"",
                    p.on_front ? Color(i) : "#fff", "\"/>");
    if (i < kMaxLegend) out += LegendEntry(i, p.label, false);
    out += "</g>";
  }
  absl::StrAppend(&out, "<text x=\"", kRight + 12, "\" y=\"", Num(kBottom), "\" fill=\"#555\">",
                  "filled: Pareto front</text>");
  return out + "</svg>";
}

std::string StandaloneSvg(std::string_view svg) {
  std::string body(svg);
  const std::string tag = "<svg ";
  if (body.rfind(tag, 0) == 0) {
    body.insert(tag.size(), "xmlns=\"http://www.w3.org/2000/svg\" ");
  }
  return absl::StrCat("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", body, "\n");
}

}  // namespace sluice::sim
