// The load run: all mutable state lives on one EventLoop thread (LoadRun's members below);
// the calling thread waits on a Notification and reads the result only after it fired.
#include "runtime/loadgen/load_runner.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/http/http.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {
namespace {

// The function's SLO from its spec (GET /admin/v1/functions/NAME carries "spec_yaml").
absl::StatusOr<std::optional<absl::Duration>> FetchSlo(const http::Endpoint& controller,
                                                       const std::string& function) {
  http::Request req;
  req.method = "GET";
  req.target = absl::StrCat("/admin/v1/functions/", function);
  SLUICE_ASSIGN_OR_RETURN(http::Response resp, http::Fetch(controller, req, absl::Seconds(5)));
  if (resp.status == 404) {
    return absl::NotFoundError(absl::StrCat("function '", function, "' is not deployed"));
  }
  if (resp.status != 200) {
    return absl::UnavailableError(
        absl::StrCat("controller answered ", resp.status, " for ", req.target, ": ", resp.body));
  }
  const nlohmann::json doc = nlohmann::json::parse(resp.body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("spec_yaml") ||
      !doc["spec_yaml"].is_string()) {
    return absl::InternalError(absl::StrCat("controller's ", req.target, " has no spec_yaml"));
  }
  SLUICE_ASSIGN_OR_RETURN(FunctionSpec spec,
                          ParseFunctionSpec(doc["spec_yaml"].get<std::string>(), function));
  if (!spec.slo_ms.has_value())
    return std::optional<absl::Duration>();
  return std::optional<absl::Duration>(absl::Milliseconds(*spec.slo_ms));
}

std::optional<int64_t> ColdStarts(const TimelineSample& s, const std::string& function) {
  for (const FunctionSample& f : s.functions) {
    if (f.name == function)
      return f.cold_starts;
  }
  return std::nullopt;
}

absl::StatusOr<TimelineSample> SampleNow(const http::Endpoint& controller) {
  http::Request req;
  req.method = "GET";
  req.target = "/admin/v1/functions";
  SLUICE_ASSIGN_OR_RETURN(http::Response resp, http::Fetch(controller, req, absl::Seconds(5)));
  if (resp.status != 200) {
    return absl::UnavailableError(absl::StrCat("controller answered ", resp.status));
  }
  return ParseFunctionsSample(resp.body, absl::ZeroDuration());
}

class LoadRun {
 public:
  LoadRun(const LoadOptions& o, http::EventLoop& loop, http::Endpoint gateway,
          http::Endpoint controller)
      : o_(o),
        loop_(loop),
        client_(loop),
        gateway_(std::move(gateway)),
        controller_(std::move(controller)),
        outcomes_(o.arrivals.size()),
        answered_(o.arrivals.size(), false) {}

  // Posts the start to the loop and blocks until every request is answered or given up.
  void Run() {
    loop_.Post([this] { Start(); });
    done_.WaitForNotification();
  }
  std::vector<Outcome>& outcomes() { return outcomes_; }
  std::vector<TimelineSample>& timeline() { return timeline_; }

 private:
  void Start() {
    t0_ = loop_.Now();
    loop_.RunAt(t0_ + o_.duration + o_.grace, [this] { Finish(); });
    Sample();
    if (o_.on_progress) Progress();
    IssueDue();
  }

  // The live line: counts so far and the p99 of the ok answers (nearest rank, as the report).
  void Progress() {
    if (finished_) return;
    o_.on_progress(Snapshot());
    loop_.RunAfter(o_.progress_period, [this] { Progress(); });
  }

  LoadProgress Snapshot() const {
    LoadProgress p{o_.function, loop_.Now() - t0_, o_.duration, static_cast<int64_t>(next_),
                   static_cast<int64_t>(ok_latencies_.size()), errors_, std::nullopt};
    if (!ok_latencies_.empty()) p.p99 = Percentile(ok_latencies_, 99);
    return p;
  }

  // Sends every request whose time has come, then sleeps until the next one.
  void IssueDue() {
    const absl::Duration now = loop_.Now() - t0_;
    while (next_ < o_.arrivals.size() && o_.arrivals[next_] <= now)
      Send(next_++);
    if (next_ < o_.arrivals.size()) {
      loop_.RunAt(t0_ + o_.arrivals[next_], [this] { IssueDue(); });
    } else {
      MaybeFinish();
    }
  }

  void Send(size_t i) {
    http::Request req;
    req.method = "POST";
    req.target = absl::StrCat("/v2/models/", o_.function, "/infer");
    req.headers = {{"content-type", "application/json"}};
    req.body = o_.data;
    outcomes_[i].sent_at = loop_.Now() - t0_;
    ++outstanding_;
    client_.Send(gateway_, std::move(req), o_.grace,
                 [this, i](absl::StatusOr<http::Response> r) { Answer(i, std::move(r)); });
  }

  void Answer(size_t i, absl::StatusOr<http::Response> r) {
    if (finished_ || answered_[i])
      return;
    answered_[i] = true;
    --outstanding_;
    Outcome& o = outcomes_[i];
    o.latency = loop_.Now() - t0_ - o.sent_at;
    if (r.ok()) {
      o.status = r->status;
      if (r->status / 100 == 2) {
        ok_latencies_.push_back(o.latency);
      } else {
        ++errors_;
      }
    } else {
      ++errors_;
      o.error = absl::IsDeadlineExceeded(r.status()) ? "timeout" : "unavailable";
    }
    MaybeFinish();
  }

  void Sample() {
    if (finished_)
      return;
    http::Request req;
    req.method = "GET";
    req.target = "/admin/v1/functions";
    const absl::Duration at = loop_.Now() - t0_;
    client_.Send(controller_, std::move(req), o_.sample_period,
                 [this, at](absl::StatusOr<http::Response> r) {
                   if (finished_ || !r.ok() || r->status != 200)
                     return;
                   absl::StatusOr<TimelineSample> s = ParseFunctionsSample(r->body, at);
                   if (s.ok())
                     timeline_.push_back(std::move(*s));
                 });
    loop_.RunAfter(o_.sample_period, [this] { Sample(); });
  }

  void MaybeFinish() {
    if (next_ == o_.arrivals.size() && outstanding_ == 0)
      Finish();
  }

  // Requests still unanswered count as timeouts; the run's results are final from here on.
  void Finish() {
    if (finished_)
      return;
    finished_ = true;
    const absl::Duration now = loop_.Now() - t0_;
    outcomes_.resize(next_);
    for (size_t i = 0; i < next_; ++i) {
      if (answered_[i])
        continue;
      outcomes_[i].latency = now - outcomes_[i].sent_at;
      outcomes_[i].error = "timeout";
    }
    if (o_.on_progress) o_.on_progress(Snapshot());
    done_.Notify();
  }

  const LoadOptions& o_;
  http::EventLoop& loop_;
  http::Client client_;
  const http::Endpoint gateway_;
  const http::Endpoint controller_;
  absl::Time t0_;
  size_t next_ = 0;          // the next arrival to send
  int64_t outstanding_ = 0;  // sent, not answered
  bool finished_ = false;
  std::vector<Outcome> outcomes_;
  std::vector<bool> answered_;
  std::vector<absl::Duration> ok_latencies_;  // of the 2xx answers, for the live p99
  int64_t errors_ = 0;                        // answers other than 2xx and transport failures
  std::vector<TimelineSample> timeline_;
  absl::Notification done_;
};

}  // namespace

absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(http::Endpoint gateway, http::Endpoint::Parse(options.gateway));
  SLUICE_ASSIGN_OR_RETURN(http::Endpoint controller, http::Endpoint::Parse(options.controller));
  SLUICE_ASSIGN_OR_RETURN(std::optional<absl::Duration> slo,
                          FetchSlo(controller, options.function));
  absl::StatusOr<TimelineSample> before = SampleNow(controller);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::EventLoop> loop, http::EventLoop::Create());
  auto run = std::make_unique<LoadRun>(options, *loop, gateway, controller);
  run->Run();
  loop->Stop();  // no callback touches `run` after this
  LoadReport report = Summarize(options.function, options.duration, run->outcomes(), slo);
  report.timeline = std::move(run->timeline());
  std::stable_sort(report.timeline.begin(), report.timeline.end(),
                   [](const TimelineSample& a, const TimelineSample& b) { return a.at < b.at; });
  absl::StatusOr<TimelineSample> after = SampleNow(controller);
  if (before.ok() && after.ok()) {
    const std::optional<int64_t> b = ColdStarts(*before, options.function);
    const std::optional<int64_t> a = ColdStarts(*after, options.function);
    if (a && b)
      report.cold_starts = *a - *b;
  }
  return report;
}

}  // namespace sluice::runtime
