// Summaries and rendering of a load run. nlohmann::json exceptions are caught at the parse
// boundary (ParseFunctionsSample) and become InvalidArgument.
#include "runtime/loadgen/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using nlohmann::json;

double Ms(absl::Duration d) {
  return absl::ToDoubleMilliseconds(d);
}

FunctionSample ParseFunction(const json& f) {
  FunctionSample out;
  out.name = f.at("name").get<std::string>();
  out.state = f.value("state", std::string());
  out.cold_starts = f.value("cold_starts", int64_t{0});
  if (!f.contains("instances"))
    return out;
  for (const json& i : f.at("instances")) {
    InstanceSample s;
    s.id = i.value("id", int64_t{0});
    s.state = i.value("state", std::string());
    s.sm_share = i.value("sm_share", 0.0);
    s.request = i.value("request", 0.0);
    s.limit = i.value("limit", 0.0);
    out.instances.push_back(std::move(s));
  }
  return out;
}

// "2 [0.42 0.30]": the instances of `name` in the last sample of `window` and each one's SM share
// averaged over the window's samples that list it (a single sample is one 5 ms token period, so
// averaging is what makes the trend readable). "-" when the last sample lacks the function.
std::string Cell(const std::vector<const TimelineSample*>& window, const std::string& name) {
  const FunctionSample* last = nullptr;
  for (const FunctionSample& f : window.back()->functions) {
    if (f.name == name)
      last = &f;
  }
  if (last == nullptr)
    return "-";
  std::string cell = absl::StrCat(last->instances.size(), " [");
  for (size_t i = 0; i < last->instances.size(); ++i) {
    double sum = 0.0;
    int n = 0;
    for (const TimelineSample* s : window) {
      for (const FunctionSample& f : s->functions) {
        for (const InstanceSample& inst : f.instances) {
          if (f.name == name && inst.id == last->instances[i].id) {
            sum += inst.sm_share;
            ++n;
          }
        }
      }
    }
    absl::StrAppend(&cell, i ? " " : "", absl::StrFormat("%.2f", n ? sum / n : 0.0));
  }
  return cell + "]";
}

// Samples grouped by whole second of `at` (the timeline is sorted by `at`).
std::vector<std::vector<const TimelineSample*>> SecondWindows(
    const std::vector<TimelineSample>& timeline) {
  std::vector<std::vector<const TimelineSample*>> windows;
  int64_t current = -1;
  for (const TimelineSample& s : timeline) {
    const int64_t second = absl::ToInt64Seconds(s.at);
    if (windows.empty() || second != current)
      windows.emplace_back();
    current = second;
    windows.back().push_back(&s);
  }
  return windows;
}

std::string TimelineText(const std::vector<TimelineSample>& timeline) {
  std::vector<std::string> names;
  for (const TimelineSample& s : timeline) {
    for (const FunctionSample& f : s.functions) {
      if (std::find(names.begin(), names.end(), f.name) == names.end())
        names.push_back(f.name);
    }
  }
  std::string out =
      "timeline (per second: instances [mean SM share of each instance]; rows that changed)\n";
  absl::StrAppend(&out, absl::StrFormat("%7s", "t_s"));
  for (const std::string& n : names)
    absl::StrAppend(&out, absl::StrFormat("  %-24s", n));
  out += "\n";
  const auto windows = SecondWindows(timeline);
  std::string previous;
  for (size_t w = 0; w < windows.size(); ++w) {
    std::string cells;
    for (const std::string& n : names)
      absl::StrAppend(&cells, absl::StrFormat("  %-24s", Cell(windows[w], n)));
    if (cells == previous && w + 1 != windows.size())
      continue;
    previous = cells;
    const double t = std::floor(absl::ToDoubleSeconds(windows[w].front()->at));
    absl::StrAppend(&out, absl::StrFormat("%7.1f", t), cells, "\n");
  }
  return out;
}

}  // namespace

absl::Duration Percentile(std::vector<absl::Duration> values, double p) {
  if (values.empty())
    return absl::ZeroDuration();
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  const auto rank = static_cast<size_t>(std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * n));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

absl::StatusOr<TimelineSample> ParseFunctionsSample(const std::string& body, absl::Duration at) {
  TimelineSample sample{at, {}};
  try {
    const json doc = json::parse(body);
    for (const json& f : doc.at("functions"))
      sample.functions.push_back(ParseFunction(f));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("controller's function list is not {\"functions\": [...]}: ", e.what()));
  }
  return sample;
}

LoadReport Summarize(const std::string& function, absl::Duration duration,
                     const std::vector<Outcome>& outcomes, std::optional<absl::Duration> slo) {
  LoadReport r;
  r.function = function;
  r.duration = duration;
  r.slo = slo;
  std::vector<absl::Duration> ok_latencies;
  for (const Outcome& o : outcomes) {
    ++r.sent;
    const bool ok = o.error.empty() && o.status >= 200 && o.status < 300;
    if (ok) {
      ++r.ok;
      ok_latencies.push_back(o.latency);
      if (slo.has_value() && o.latency > *slo)
        ++r.violations;
    } else {
      ++r.violations;
      ++r.errors[o.error.empty() ? absl::StrCat(o.status) : o.error];
    }
  }
  r.latency.count = static_cast<int64_t>(ok_latencies.size());
  r.latency.p50 = Percentile(ok_latencies, 50);
  r.latency.p95 = Percentile(ok_latencies, 95);
  r.latency.p99 = Percentile(ok_latencies, 99);
  r.latency.max = Percentile(ok_latencies, 100);
  r.svr = r.sent ? static_cast<double>(r.violations) / static_cast<double>(r.sent) : 0.0;
  return r;
}

std::string ReportJson(const LoadReport& r) {
  json timeline = json::array();
  for (const TimelineSample& s : r.timeline) {
    json functions = json::array();
    for (const FunctionSample& f : s.functions) {
      json instances = json::array();
      for (const InstanceSample& i : f.instances) {
        instances.push_back({{"id", i.id}, {"state", i.state}, {"sm_share", i.sm_share}});
      }
      functions.push_back({{"name", f.name}, {"state", f.state}, {"instances", instances}});
    }
    timeline.push_back({{"t_s", absl::ToDoubleSeconds(s.at)}, {"functions", functions}});
  }
  json j = {{"function", r.function},
            {"seconds", absl::ToDoubleSeconds(r.duration)},
            {"slo_ms", r.slo ? json(Ms(*r.slo)) : json(nullptr)},
            {"sent", r.sent},
            {"ok", r.ok},
            {"errors", r.errors},
            {"latency_ms",
             {{"p50", Ms(r.latency.p50)},
              {"p95", Ms(r.latency.p95)},
              {"p99", Ms(r.latency.p99)},
              {"max", Ms(r.latency.max)}}},
            {"violations", r.violations},
            {"svr", r.svr},
            {"cold_starts", r.cold_starts ? json(*r.cold_starts) : json(nullptr)},
            {"timeline", timeline}};
  return j.dump();
}

std::string ReportText(const LoadReport& r) {
  std::string out = absl::StrFormat("function %s: %.1f s, %d requests sent, %d ok\n", r.function,
                                    absl::ToDoubleSeconds(r.duration), r.sent, r.ok);
  if (!r.errors.empty()) {
    out += "errors:";
    for (const auto& [what, n] : r.errors)
      absl::StrAppend(&out, " ", what, "=", n);
    out += "\n";
  }
  absl::StrAppend(&out, absl::StrFormat("latency (ok requests): p50 %.1f ms, p95 %.1f ms, "
                                        "p99 %.1f ms, max %.1f ms\n",
                                        Ms(r.latency.p50), Ms(r.latency.p95), Ms(r.latency.p99),
                                        Ms(r.latency.max)));
  const std::string slo = r.slo ? absl::StrFormat("SLO %.0f ms", Ms(*r.slo)) : "no SLO";
  absl::StrAppend(&out, absl::StrFormat("SVR %.2f %% (%d of %d failed or over the %s)\n",
                                        100.0 * r.svr, r.violations, r.sent, slo));
  absl::StrAppend(&out, "cold starts: ",
                  r.cold_starts ? absl::StrCat(*r.cold_starts) : std::string("unknown"), "\n");
  if (!r.timeline.empty())
    out += TimelineText(r.timeline);
  return out;
}

}  // namespace sluice::runtime
