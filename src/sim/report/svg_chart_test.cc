// The SVG primitives: ticks, escaping, one group per series, broken lines at NaN, the Pareto
// front line, well-formed output.
#include "sim/report/svg_chart.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/testing/well_formed.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing_util::XmlError;

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgChartTest, NiceTicksCoverTheRangeWithRoundSteps) {
  EXPECT_THAT(NiceTicks(0, 10, 6), ::testing::ElementsAre(0, 2, 4, 6, 8, 10));
  const std::vector<double> t = NiceTicks(0.13, 0.91, 6);
  EXPECT_LE(t.front(), 0.13);
  EXPECT_GE(t.back(), 0.91);
  EXPECT_NEAR(t[1] - t[0], 0.2, 1e-12);
  const std::vector<double> flat = NiceTicks(3, 3, 6);  // a constant series still gets an axis
  EXPECT_LT(flat.front(), 3);
  EXPECT_GT(flat.back(), 3);
  EXPECT_EQ(NiceTicks(NAN, 1, 6).size(), 2u);
}

TEST(SvgChartTest, EscapesMarkup) {
  EXPECT_EQ(XmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(SvgChartTest, LineChartHasOneGroupPerSeriesAndIsWellFormed) {
  LineChartSpec spec{"c1", "GPUs <&>", "time (s)", "GPUs", "note", {}};
  spec.series.push_back({"a", {0, 1, 2}, {1, 2, 3}});
  spec.series.push_back({"b&c", {0, 1, 2}, {3, NAN, 1}});
  const std::string svg = RenderLineChart(spec);
  EXPECT_EQ(Count(svg, "<g class=\"series\""), 2u);
  EXPECT_THAT(svg, HasSubstr("data-series=\"b&amp;c\""));
  EXPECT_THAT(svg, HasSubstr("data-chart=\"c1\""));
  EXPECT_EQ(Count(svg, "<polyline"), 3u);  // b is broken at its NaN
  EXPECT_THAT(svg, Not(HasSubstr("http")));
  EXPECT_EQ(XmlError(svg), "");
  EXPECT_EQ(XmlError(StandaloneSvg(svg)), "");
  EXPECT_THAT(StandaloneSvg(svg), HasSubstr("xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(SvgChartTest, EmptyChartSaysNoData) {
  const std::string svg = RenderLineChart({"e", "empty", "x", "y", "", {}});
  EXPECT_THAT(svg, HasSubstr("no data"));
  EXPECT_EQ(XmlError(svg), "");
}

TEST(SvgChartTest, BarChartDrawsEachFiniteValue) {
  BarChartSpec spec{"b", "latency", "ms", "", {"f1", "f2"}, {{"p50", {1, 2}}, {"p99", {3, NAN}}}};
  const std::string svg = RenderBarChart(spec);
  EXPECT_EQ(Count(svg, "<g class=\"series\""), 2u);
  EXPECT_EQ(Count(svg, "<rect x="), 3u + 2u);  // three bars, two legend swatches
  EXPECT_EQ(XmlError(svg), "");
}

TEST(SvgChartTest, ScatterMarksTheFront) {
  ScatterChartSpec spec{"p", "pareto", "GPUs", "SVR", "", {}};
  spec.points = {{"a", 1, 5, true, "w"}, {"b", 2, 1, true, "w"}, {"c", 3, 4, false, "w"}};
  std::string svg = RenderScatterChart(spec);
  EXPECT_EQ(Count(svg, "data-front=\"1\""), 2u);
  EXPECT_EQ(Count(svg, "class=\"front\""), 1u);
  EXPECT_EQ(Count(svg, "<circle"), 3u);
  EXPECT_EQ(XmlError(svg), "");
  // One front line per group (workload); a group with a single front point draws none.
  spec.points.push_back({"d", 4, 6, true, "v"});
  spec.points.push_back({"e", 5, 2, true, "v"});
  spec.points.push_back({"f", 6, 9, true, "u"});
  svg = RenderScatterChart(spec);
  EXPECT_EQ(Count(svg, "class=\"front\""), 2u);
}

}  // namespace
}  // namespace sluice::sim
