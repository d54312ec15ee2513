// Dashboard: the controller's live dashboard (docs/platform.md "Dashboard"): the page at
// /dashboard and its assets (embedded in the binary at build time, web/dashboard), the JSON it
// polls (/dashboard/api/state?since=MS), and /dashboard/report, the same page with the data and
// the chart library inlined so it opens offline. Owns the DashboardHistory and the gateway's last
// load report per function. Used by ControllerCore (hooks in controller_routes.cc,
// controller_http.cc; sampling in dashboard_sample.cc). Not thread-safe: on the controller's loop.
#ifndef SLUICE_RUNTIME_CONTROLLER_DASHBOARD_HTTP_H_
#define SLUICE_RUNTIME_CONTROLLER_DASHBOARD_HTTP_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "runtime/controller/dashboard_history.h"
#include "runtime/http/http.h"

namespace sluice::runtime {

struct DashboardOptions {
  absl::Duration sample_every = absl::Seconds(1);
  size_t max_samples = 900;  // 15 minutes at one sample a second
  size_t max_events = 2000;
  // A function's load figures count as current this long after its last load report (the
  // gateway reports every second); older ones read as zero.
  absl::Duration load_stale_after = absl::Seconds(3);
};

// One function's entry of a gateway load report, as the dashboard keeps it.
struct DashLoad {
  absl::Time at;
  double rps = 0;
  int64_t queued = 0;
  int64_t answered = 0;
  int64_t violations = 0;
  double p50_ms = 0;
  double p95_ms = 0;
  double p99_ms = 0;
};

class Dashboard {
 public:
  explicit Dashboard(DashboardOptions options = {});

  // Keeps each entry of a POST /internal/v1/load "functions" array (already validated by the
  // controller: name, rps). Optional members (queued, answered, slo_violations, p50_ms, p95_ms,
  // p99_ms; older gateways send none of the last four) read as 0 when absent or not numbers.
  void OnLoad(const nlohmann::json& entries, absl::Time now);
  // True when a sample is due (one per options.sample_every).
  bool Due(absl::Time now) const;
  // Fills each function's load figures from its last report (zero when stale) and records the
  // sample (events come from the diff against the previous one).
  void Add(DashSample sample);
  void AddEvent(DashEvent event) { history_.AddEvent(std::move(event)); }

  // Registers GET /dashboard, /dashboard/assets/{name}, /dashboard/api/state and
  // /dashboard/report; `now` reads the loop's clock.
  void AddRoutes(http::Router& router, std::function<absl::Time()> now);

  // The handlers' answers (public for tests). `since_ms`: the raw query value ("" = 0); 400
  // naming `since` when it is not a non-negative integer.
  http::Response State(const std::string& since_ms, absl::Time now) const;
  http::Response Page() const;
  http::Response Asset(const std::string& name) const;
  http::Response Report(absl::Time now) const;

  const DashboardHistory& history() const { return history_; }

 private:
  DashboardOptions options_;
  DashboardHistory history_;
  std::map<std::string, DashLoad> loads_;
  std::optional<absl::Time> last_sample_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_DASHBOARD_HTTP_H_
