// ControllerCore: node status polling, the routes the gateway polls (and their version), the
// gateway's load reports and wake-ups feeding the scalers (horizontal or hybrid), PUT /scale and
// /metrics.
#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

// A json member that must be a number >= 0, or an error message naming `field`.
std::optional<std::string> CheckCount(const json& j, const char* key, const std::string& field,
                                      bool required, bool integer) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (!required)
      return std::nullopt;
    return absl::StrCat("field '", field, "': required");
  }
  if (!it->is_number() || (integer && !it->is_number_integer()) || it->get<double>() < 0) {
    return absl::StrCat("field '", field, "': must be ", integer ? "an integer" : "a number",
                        " >= 0");
  }
  return std::nullopt;
}

}  // namespace

void ControllerCore::StartPolling() {
  PollNodes();
  TickLlm();  // P/D pools: stats and autoscaler, at most every options_.llm.poll
  SampleDashboard();  // dashboard_sample.cc: one sample a second
  loop_.RunAfter(options_.node_poll, [this] { StartPolling(); });
}

void ControllerCore::PollNodes() {
  for (size_t a = 0; a < agents_.size(); ++a) {
    PollParams(a);  // parameter-store contents for cache-aware placement (controller_pipeline.cc)
    if (agents_[a].poll_in_flight)
      continue;
    agents_[a].poll_in_flight = true;
    client_.Send(agents_[a].endpoint, AgentRequest("GET", "/agent/v1/node"), absl::Seconds(2),
                 [this, a, sent = loop_.Now()](absl::StatusOr<http::Response> r) {
                   agents_[a].poll_in_flight = false;
                   if (!r.ok() || r->status != 200)
                     return;
                   absl::StatusOr<NodeReport> node = ParseNodeReport(r->body);
                   if (node.ok())
                     ApplyNode(static_cast<int>(a), *node, sent);
                 });
  }
}

// A started instance the report does not list is gone only when the agent had confirmed it
// before the poll was sent: a report the agent wrote before taking the start (its answer
// overtaken by the start's 201) would otherwise erase a live instance, whose next listing then
// stops it as an orphan.
void ControllerCore::ApplyNode(int agent, const NodeReport& node, absl::Time polled_at) {
  ControllerAgent& a = agents_[agent];
  for (size_t g = 0; g < a.gpus.size() && g < node.gpus.size(); ++g)
    a.gpus[g].raw = node.gpus[g].raw;
  std::set<int64_t> seen;
  for (const ReportedInstance& ai : node.instances) {
    seen.insert(ai.id);
    auto it = instances_.find(ai.id);
    if (it == instances_.end() || it->second.agent != agent) {
      if (!IsTerminalAgentState(ai.state) && ai.state != "draining") {
        ControllerInstance orphan;
        orphan.id = ai.id;
        orphan.agent = agent;
        instances_.emplace(ai.id, std::move(orphan));
        SendDelete(ai.id, absl::ZeroDuration());  // not ours (any more): stop it
      } else if (ai.state == "stopped" || ai.state == "failed") {
        Forget(agent, ai.id);  // e.g. a finished profiling instance
      }
      continue;
    }
    ControllerInstance& i = it->second;
    i.confirmed = true;
    i.confirmed_at = std::min(i.confirmed_at, polled_at);
    i.state = ai.state;
    if (i.state == "ready" && i.replacing_since != absl::InfinitePast())
      ReportReplacement(i);  // controller_cluster.cc
    i.restarts = ai.restarts;
    i.sm_share = ai.sm_share;
    i.mem_used_bytes = ai.mem_used_bytes;
    i.in_flight = ai.in_flight;
    if (ai.parked)
      i.parked = *ai.parked;
    if (ai.request > 0)
      i.request = ai.request;
    if (ai.limit > 0)
      i.limit = ai.limit;
    if (ai.port > 0)
      i.url = absl::StrCat(a.endpoint.host, ":", ai.port);
    if (ai.state == "completed")
      Release(i);
    if ((ai.state == "stopped" || ai.state == "failed") && !i.profiling) {
      Erase(ai.id);
      Forget(agent, ai.id);
    }
  }
  std::vector<int64_t> gone;
  for (const auto& [id, i] : instances_) {
    if (i.agent == agent && i.confirmed && i.confirmed_at < polled_at && !i.profiling &&
        !seen.contains(id))
      gone.push_back(id);
  }
  for (int64_t id : gone)
    Erase(id);
  Touch();
}

void ControllerCore::Forget(int agent, int64_t id) {
  // A DELETE of a stopped or failed instance makes the agent forget it.
  client_.Send(agents_[agent].endpoint,
               AgentRequest("DELETE", absl::StrCat("/agent/v1/instances/", id)), absl::Seconds(10),
               [](absl::StatusOr<http::Response>) {});
}

json ControllerCore::RouteJson(const ControllerFunction& f) const {
  const FunctionSpec& spec = f.record.spec;
  json instances = json::array();
  for (const ControllerInstance* i : Active(spec.name)) {
    if (!i->mutate_to.empty())
      continue;  // switching roles: back with its new role once switched
    instances.push_back(
        json{{"id", i->id},
             {"url", i->url},
             {"capacity_rps", CapacityOf(f, *i)},
             {"state", i->state == "ready" ? "ready" : "starting"},
             {"request", i->request},
             {"limit", i->limit},
             {"sm_share", i->sm_share}});
    if (!i->role.empty())
      instances.back()["role"] = i->role;
  }
  std::string state = FunctionStateName(f.record.state);
  if (f.record.state == FunctionState::kReady && instances.empty() &&
      (f.unschedulable || f.record.max() == 0)) {
    state = "unschedulable";
  }
  const int batch = f.record.profile ? f.record.profile->batch : spec.batching.max_batch;
  json route{{"name", spec.name},
             {"kind", FunctionKindName(spec.kind)},
             {"state", state},
             {"slo_ms", spec.slo_ms ? json(*spec.slo_ms) : json(nullptr)},
             {"max_batch", std::min(batch, spec.batching.max_batch)},
             {"max_queue_delay_ms", spec.batching.max_queue_delay_ms},
             {"queue_max", spec.queue ? spec.queue->max_length : 256},
             {"timeout_ms", spec.queue ? spec.queue->timeout_ms : 30000.0},
             {"desired", f.desired},
             {"instances", std::move(instances)}};
  AddStageFields(f, route);  // pipeline stages: pipeline, stage, stages
  return route;
}

std::string ControllerCore::RouteKey() const {
  json all = json::array();
  for (const auto& [name, f] : functions_) {
    json r = RouteJson(f);
    for (json& i : r["instances"])
      i.erase("sm_share");
    all.push_back(std::move(r));
  }
  return all.dump();
}

void ControllerCore::Touch() {
  std::string key = RouteKey();
  if (key == routes_key_)
    return;
  routes_key_ = std::move(key);
  ++routes_version_;
}

http::Response ControllerCore::Routes() const {
  json all = json::array();
  for (const auto& [name, f] : functions_)
    all.push_back(RouteJson(f));
  return http::JsonResponse(
      200, json{{"version", routes_version_}, {"functions", std::move(all)}}.dump());
}

http::Response ControllerCore::Load(const std::string& body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return http::ErrorResponse(400, "body: not a JSON object");
  auto fs = j.find("functions");
  if (fs == j.end() || !fs->is_array()) {
    return http::ErrorResponse(400, "field 'functions': required, an array");
  }
  for (size_t k = 0; k < fs->size(); ++k) {
    const json& e = (*fs)[k];
    const std::string at = absl::StrCat("functions[", k, "]");
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) {
      return http::ErrorResponse(400, absl::StrCat("field '", at, ".name': required, a string"));
    }
    for (auto [key, integer, required] :
         {std::tuple{"rps", false, true}, std::tuple{"queued", true, false}}) {
      if (auto err = CheckCount(e, key, absl::StrCat(at, ".", key), required, integer)) {
        return http::ErrorResponse(400, *err);
      }
    }
  }
  const absl::Time now = loop_.Now();
  // Several gateways (issue 12): each reports its share; the scalers see their sum, once per
  // round (load_merge.h). A report without "gateway" drives them alone, as before.
  const json* entries = &*fs;
  json merged;
  if (auto g = j.find("gateway"); g != j.end() && g->is_string()) {
    std::optional<json> m = load_merger_.Add(g->get<std::string>(), *fs, now);
    if (!m)
      return http::JsonResponse(200, json{{"ok", true}, {"merged", false}}.dump());
    merged = *std::move(m);
    entries = &merged;
  }
  dashboard_->OnLoad(*entries, absl::Now());  // the dashboard's figures (wall clock: dashboard_http.h)
  const std::set<std::string> piped = DrivePipelines(*entries, now);  // controller_pipeline.cc
  for (const json& e : *entries) {
    auto it = functions_.find(e["name"].get<std::string>());
    if (it == functions_.end() || (!it->second.scaler && !it->second.hybrid) ||
        piped.contains(it->first))
      continue;
    ControllerFunction& f = it->second;
    core::LoadSample s;
    s.at = now;
    s.rps = e["rps"].get<double>();
    s.queued = e.value("queued", 0);
    s.instances = static_cast<int>(Active(f.record.spec.name).size());
    s.capacity_rps_per_instance = f.record.profile->capacity_rps;
    if (f.hybrid) {
      DriveHybrid(f, s, now);
      continue;
    }
    f.scaler->Observe(s);
    f.desired = f.scaler->Desired(now);
    Reconcile(f, /*cold_start=*/true);
    DriveParking(f.record.spec.name, *f.scaler, now);
  }
  return http::JsonResponse(200, json{{"ok", true}}.dump());
}

http::Response ControllerCore::Wake(const std::string& body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return http::ErrorResponse(400, "field 'name': required, a string");
  }
  const std::string name = j["name"].get<std::string>();
  auto it = functions_.find(name);
  if (it == functions_.end())
    return http::ErrorResponse(404, absl::StrCat("no function '", name, "'"));
  ControllerFunction& f = it->second;
  bool started = false;
  // A hybrid function wakes like the others: one instance by its set's placement and quota.
  if ((f.scaler || f.hybrid) && Active(name).empty() && f.record.max() >= 1) {
    f.desired = std::max(f.desired, 1);
    Reconcile(f, /*cold_start=*/true);
    started = !Active(name).empty();
  }
  if (started) PollUntilReady(name, loop_.Now() + absl::Seconds(5));
  return http::JsonResponse(200, json{{"started", started}}.dump());
}

void ControllerCore::PollUntilReady(const std::string& name, absl::Time deadline) {
  // A woken function's requests wait at the gateway: learn that its instance is ready within
  // kWakePoll (a pooled cold start takes tens of ms), not at the next node_poll.
  constexpr absl::Duration kWakePoll = absl::Milliseconds(5);
  for (const ControllerInstance* i : Active(name)) {
    if (i->state == "ready") return;
  }
  if (loop_.Now() >= deadline) return;
  PollNodes();
  loop_.RunAfter(kWakePoll, [this, name, deadline] { PollUntilReady(name, deadline); });
}

http::Response ControllerCore::Scale(const std::string& name, const std::string& body) {
  auto it = functions_.find(name);
  if (it == functions_.end())
    return http::ErrorResponse(404, absl::StrCat("no function '", name, "'"));
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return http::ErrorResponse(400, "body: not a JSON object");
  for (const char* key : {"min", "max"}) {
    if (auto err = CheckCount(j, key, key, /*required=*/false, /*integer=*/true)) {
      return http::ErrorResponse(400, *err);
    }
  }
  if (!j.contains("min") && !j.contains("max")) {
    return http::ErrorResponse(400, "field 'min': 'min' or 'max' is required");
  }
  ControllerFunction& f = it->second;
  const int min = j.contains("min") ? j["min"].get<int>() : f.record.min();
  const int max = j.contains("max") ? j["max"].get<int>() : f.record.max();
  if (min > max) {
    return http::ErrorResponse(400, absl::StrCat("field '", j.contains("min") ? "min" : "max",
                                                 "': min ", min, " > max ", max));
  }
  if (j.contains("min"))
    f.record.min_override = min;
  if (j.contains("max"))
    f.record.max_override = max;
  if (absl::Status s = Persist(f); !s.ok()) {
    return http::ErrorResponse(500, absl::StrCat("registry: ", s.message()));
  }
  if (f.scaler || f.hybrid) {
    MakeScaler(f);
    Reconcile(f, /*cold_start=*/false);
  }
  Touch();
  return http::JsonResponse(200, StatusJson(f).dump());
}

std::string ControllerCore::RenderMetrics() {
  for (auto& [labels, set] : instance_series_)
    set = false;
  std::map<std::vector<std::string>, int> counts;
  for (const auto& [id, i] : instances_) {
    if (!i.profiling)
      ++counts[{i.function, i.removing ? "draining" : i.state}];
  }
  for (const auto& [labels, n] : counts) {
    if (auto g = instances_metric_->WithLabels(labels); g.ok())
      (*g)->Set(n);
    instance_series_[labels] = true;
  }
  for (auto& [labels, set] : instance_series_) {
    if (!set)
      (*instances_metric_->WithLabels(labels))->Set(0);
  }
  for (FunctionState s : {FunctionState::kProfiling, FunctionState::kReady, FunctionState::kFailed,
                          FunctionState::kDeleting}) {
    int n = 0;
    for (const auto& [name, f] : functions_)
      n += f.record.state == s ? 1 : 0;
    (*functions_metric_->WithLabels({FunctionStateName(s)}))->Set(n);
  }
  (*version_metric_->WithLabels({}))->Set(static_cast<double>(routes_version_));
  std::set<int64_t> active;  // GPU ids (cluster-wide) holding an instance
  for (const auto& [id, i] : instances_) {
    for (const common::GpuId g : i.gpus) active.insert(static_cast<int64_t>(g.value()));
  }
  (*active_gpus_metric_->WithLabels({}))->Set(static_cast<double>(active.size()));
  return metrics_.Render();
}

}  // namespace sluice::runtime
