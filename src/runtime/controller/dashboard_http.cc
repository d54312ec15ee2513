// Dashboard: load reports kept per function, the sampling cadence, and the HTTP answers of
// /dashboard (page, embedded assets, state JSON, offline report).
#include "runtime/controller/dashboard_http.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "runtime/controller/dashboard_assets.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

double Number(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string AssetText(std::string_view name) {
  std::optional<DashboardAsset> a = FindDashboardAsset(name);
  return a ? std::string(a->body) : std::string();
}

// Text between `<!--begin-->` and `<!--end-->` markers of the page, or "" when absent.
std::string Between(const std::string& page, const std::string& begin, const std::string& end) {
  const size_t b = page.find(begin);
  const size_t e = page.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b)
    return "";
  return page.substr(b + begin.size(), e - b - begin.size());
}

// Inline <script> text cannot contain "</script": JSON and the strings of JS read "<\/" as
// "</" (the vendored uPlot has no "</script" at all; the replacement only guards it).
std::string ScriptSafe(const std::string& text) {
  return absl::StrReplaceAll(text, {{"</script", "<\\/script"}, {"</SCRIPT", "<\\/SCRIPT"}});
}
std::string JsonSafe(const std::string& text) { return absl::StrReplaceAll(text, {{"</", "<\\/"}}); }

}  // namespace

Dashboard::Dashboard(DashboardOptions options)
    : options_(options), history_(options.max_samples, options.max_events) {}

void Dashboard::OnLoad(const json& entries, absl::Time now) {
  for (const json& e : entries) {
    DashLoad l;
    l.at = now;
    l.rps = Number(e, "rps");
    l.queued = static_cast<int64_t>(Number(e, "queued"));
    // Rejected (429) requests were never answered but count in the SVR's denominator.
    l.answered = static_cast<int64_t>(Number(e, "answered") + Number(e, "rejected"));
    l.violations = static_cast<int64_t>(Number(e, "slo_violations"));
    l.p50_ms = Number(e, "p50_ms");
    l.p95_ms = Number(e, "p95_ms");
    l.p99_ms = Number(e, "p99_ms");
    loads_[e["name"].get<std::string>()] = l;
  }
}

bool Dashboard::Due(absl::Time now) const {
  return !last_sample_ || now - *last_sample_ >= options_.sample_every;
}

void Dashboard::Add(DashSample sample) {
  last_sample_ = sample.at;
  for (DashFunction& f : sample.functions) {
    auto it = loads_.find(f.name);
    if (it == loads_.end() || sample.at - it->second.at > options_.load_stale_after)
      continue;
    const DashLoad& l = it->second;
    f.rps = l.rps;
    f.queued = l.queued;
    f.answered = l.answered;
    f.violations = l.violations;
    f.p50_ms = l.p50_ms;
    f.p95_ms = l.p95_ms;
    f.p99_ms = l.p99_ms;
  }
  history_.Add(std::move(sample));
}

void Dashboard::AddRoutes(http::Router& r, std::function<absl::Time()> now) {
  r.Handle("GET", "/dashboard",
           [this](http::Request&, http::Responder respond) { respond(Page()); });
  r.Handle("GET", "/dashboard/assets/{name}", [this](http::Request& req, http::Responder respond) {
    respond(Asset(req.param("name")));
  });
  r.Handle("GET", "/dashboard/api/state",
           [this, now](http::Request& req, http::Responder respond) {
             respond(State(req.query_param("since"), now()));
           });
  r.Handle("GET", "/dashboard/report", [this, now](http::Request&, http::Responder respond) {
    respond(Report(now()));
  });
}

http::Response Dashboard::State(const std::string& since_ms, absl::Time now) const {
  int64_t since = 0;
  if (!since_ms.empty() && (!absl::SimpleAtoi(since_ms, &since) || since < 0)) {
    return http::ErrorResponse(
        400, absl::StrCat("query 'since': must be milliseconds since the epoch (an integer >= 0), "
                          "got '", since_ms, "'"));
  }
  json j = history_.StateJson(now, absl::FromUnixMillis(since));
  j["charts"] = DashboardChartsVendored();
  return http::JsonResponse(200, j.dump());
}

http::Response Dashboard::Page() const {
  http::Response r;
  r.content_type = "text/html; charset=utf-8";
  r.body = AssetText("index.html");
  return r;
}

http::Response Dashboard::Asset(const std::string& name) const {
  std::optional<DashboardAsset> a = FindDashboardAsset(name);
  if (!a)
    return http::ErrorResponse(404, absl::StrCat("no dashboard asset '", name, "'"));
  http::Response r;
  r.content_type = std::string(a->content_type);
  r.body = std::string(a->body);
  r.headers.push_back({"cache-control", "no-cache"});
  return r;
}

http::Response Dashboard::Report(absl::Time now) const {
  const std::string page = AssetText("index.html");
  json data = history_.StateJson(now, absl::UnixEpoch());
  data["charts"] = DashboardChartsVendored();
  data["report"] = true;
  http::Response r;
  r.content_type = "text/html; charset=utf-8";
  r.headers.push_back({"content-disposition", "inline; filename=\"sluice-dashboard.html\""});
  r.body = absl::StrCat(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>Sluice dashboard report</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n",
      AssetText("uPlot.min.css"), "\n", AssetText("dashboard.css"), "\n</style></head>\n<body>",
      Between(page, "<!--body-->", "<!--/body-->"), "\n<script>\n",
      ScriptSafe(AssetText("uPlot.iife.min.js")), "\n</script>\n<script>\nwindow.SLUICE_DASHBOARD_DATA = ",
      JsonSafe(data.dump()), ";\n</script>\n<script>\n", ScriptSafe(AssetText("dashboard.js")),
      "\n</script>\n</body></html>\n");
  return r;
}

}  // namespace sluice::runtime
