// The gateway's control plane: polls the controller's route table (every routes_poll, and at once
// after a wake), applies it to the per-function queues and dispatchers, wakes functions that have
// no instance, and pushes per-function load every load_report (docs/platform.md).
#include <iterator>

#include "absl/strings/str_cat.h"

#include "nlohmann/json.hpp"
#include "runtime/common/log.h"
#include "runtime/gateway/gateway_core.h"

namespace sluice::runtime::internal {
namespace {

http::Request JsonPost(const std::string& target, std::string body) {
  http::Request req;
  req.method = "POST";
  req.target = target;
  req.headers.emplace_back("content-type", "application/json");
  req.body = std::move(body);
  return req;
}

}  // namespace

void GatewayCore::StartControl() {
  last_load_report_ = loop_.Now();
  PollRoutes();
  load_timer_ = loop_.RunAfter(options_.load_report, [this] { ReportLoad(); });
}

void GatewayCore::Shutdown() {
  shut_down_ = true;
  if (poll_timer_ != 0)
    loop_.Cancel(poll_timer_);
  if (load_timer_ != 0)
    loop_.Cancel(load_timer_);
  for (auto& [name, f] : functions_) {
    if (f->timer != 0)
      loop_.Cancel(f->timer);
  }
}

void GatewayCore::PollRoutes() {
  if (shut_down_)
    return;
  if (poll_in_flight_) {
    poll_again_ = true;  // a wake asked for fresh routes while a poll was out
    return;
  }
  if (poll_timer_ != 0)
    loop_.Cancel(poll_timer_);
  poll_timer_ = 0;
  poll_in_flight_ = true;
  http::Request req;
  req.method = "GET";
  req.target = "/internal/v1/routes";
  client_.Send(controller_, std::move(req), std::max(options_.routes_poll, absl::Seconds(1)),
               [this](absl::StatusOr<http::Response> r) { OnRoutes(std::move(r)); });
}

void GatewayCore::OnRoutes(absl::StatusOr<http::Response> result) {
  poll_in_flight_ = false;
  if (shut_down_)
    return;
  // A failed poll keeps the last table: instances keep serving while the controller restarts
  // (or another one takes over: FollowLeader).
  if (!result.ok() || result->status != 200)
    FollowLeader(result);
  if (result.ok() && result->status == 200) {
    if (controllers_.size() > 1 && controller_.ToString() != followed_) {
      followed_ = controller_.ToString();  // logged once per leader, not per failed poll
      LogInfo("gateway", "following controller ", followed_);
    }
    absl::StatusOr<RouteTable> table = ParseRouteTable(result->body);
    if (table.ok()) {
      ApplyRoutes(*std::move(table));
    } else {
      // Keeping the last table is right; doing so silently is not: say why, once per change.
      const std::string why(table.status().message());
      if (why != last_route_error_)
        LogWarning("gateway", "route table from the controller rejected (keeping the last): ", why);
      last_route_error_ = why;
    }
  }
  if (poll_again_) {
    poll_again_ = false;
    PollRoutes();
    return;
  }
  // Requests held for a cold start (docs/platform.md "Cold starts"): a pooled start is ready in
  // tens of ms, so look for its route every few ms rather than a whole routes_poll later.
  bool holding = false;
  for (const auto& [name, f] : functions_) {
    holding = holding || (f->starting > 0 && !f->queue.empty());
  }
  const absl::Duration next =
      holding ? std::min(options_.routes_poll, absl::Milliseconds(5)) : options_.routes_poll;
  poll_timer_ = loop_.RunAfter(next, [this] {
    poll_timer_ = 0;
    PollRoutes();
  });
}

void GatewayCore::SetControllers(std::vector<http::Endpoint> controllers,
                                 std::string gateway_id) {
  controllers_ = std::move(controllers);
  controller_index_ = 0;
  if (!controllers_.empty())
    controller_ = controllers_[0];
  gateway_id_ = std::move(gateway_id);
}

void GatewayCore::FollowLeader(const absl::StatusOr<http::Response>& result) {
  if (controllers_.size() < 2)
    return;  // one controller: wait for it
  size_t next = (controller_index_ + 1) % controllers_.size();
  if (result.ok() && result->status == 503) {  // a follower names the leader
    const nlohmann::json j = nlohmann::json::parse(result->body, nullptr, false);
    if (j.is_object() && j.contains("leader") && j["leader"].is_string()) {
      const std::string leader = j["leader"].get<std::string>();
      for (size_t k = 0; k < controllers_.size(); ++k) {
        if (controllers_[k].ToString() == leader)
          next = k;
      }
    }
  }
  controller_index_ = next;
  controller_ = controllers_[next];
}

void GatewayCore::ApplyRoutes(RouteTable table) {
  absl::flat_hash_map<std::string, bool> seen;
  for (const Route& route : table.functions) {
    seen[route.name] = true;
    ApplyRoute(route);
  }
  std::vector<std::string> gone;
  for (const auto& [name, f] : functions_) {
    if (!seen.contains(name))
      gone.push_back(name);
  }
  for (const std::string& name : gone)
    RemoveFunction(name);
  ApplyPipelines(table);
  routes_version_ = table.version;
}

void GatewayCore::ApplyRoute(const Route& route) {
  std::unique_ptr<FunctionState>& slot = functions_[route.name];
  if (slot == nullptr) {
    slot = std::make_unique<FunctionState>(*core::FunctionQueue::Create(route.queue_max));
    slot->metrics = &metrics_.ForFunction(route.name);
  }
  FunctionState& f = *slot;
  f.route = route;
  f.queue.set_max_queued(route.queue_max);
  std::map<int64_t, http::Endpoint> endpoints;
  std::map<int64_t, std::string> roles;
  std::map<int64_t, int> decode_ready;
  int ready = 0;
  f.starting = 0;
  for (const RouteInstance& inst : route.instances) {
    absl::StatusOr<http::Endpoint> ep = http::Endpoint::Parse(inst.url);
    if (!ep.ok())
      continue;  // an instance the gateway cannot reach is one it cannot use
    endpoints[inst.id] = *ep;
    const bool is_ready = inst.state == "ready";
    ready += is_ready ? 1 : 0;
    f.starting += inst.state == "starting" ? 1 : 0;
    roles[inst.id] = inst.role;
    if (inst.role == "decode") {  // P/D: chosen per request after the prefill, not dispatched
      f.dispatcher.Remove(inst.id);
      if (is_ready)
        decode_ready[inst.id] = f.decode_ready.contains(inst.id) ? f.decode_ready[inst.id] : 0;
    } else {
      f.dispatcher.Upsert(inst.id, inst.capacity_rps, is_ready);
    }
    const InstanceMetrics m = metrics_.ForInstance(route.name, inst.id);
    m.sm_share->Set(inst.sm_share);
    m.sm_request->Set(inst.request);
    m.sm_limit->Set(inst.limit);
  }
  for (const auto& [id, ep] : f.endpoints) {
    if (!endpoints.contains(id))
      f.dispatcher.Remove(id);
  }
  f.endpoints = std::move(endpoints);
  f.roles = std::move(roles);
  f.decode_ready = std::move(decode_ready);
  f.metrics->instances_ready->Set(ready);
  f.metrics->instances_starting->Set(f.starting);
  if (route.Unservable()) {
    FailQueued(
        f, 503,
        absl::StrCat("function '", route.name, "' cannot be served (state ", route.state, ")"));
  } else if (!f.queue.empty() && ready == 0) {
    MaybeWake(f);
  }
  TryDispatch(f);
  f.metrics->queue_length->Set(static_cast<double>(f.queue.size()));
  Rearm(f);
}

void GatewayCore::RemoveFunction(const std::string& name) {
  auto it = functions_.find(name);
  FunctionState& f = *it->second;
  FailQueued(f, 503, absl::StrCat("function '", name, "' was deleted"));
  if (f.timer != 0)
    loop_.Cancel(f.timer);
  // Requests in flight are still answered from their batch (pending_ owns them); only their
  // deadline timers go with the function: the batch's own timeout bounds them.
  functions_.erase(it);
}

void GatewayCore::MaybeWake(FunctionState& f) {
  const absl::Time now = loop_.Now();
  if (f.starting > 0 || now - f.last_wake < absl::Seconds(1))
    return;  // an instance is on its way, or a wake went out just now
  f.last_wake = now;
  nlohmann::json body = {{"name", f.route.name}};
  client_.Send(controller_, JsonPost("/internal/v1/wake", body.dump()), absl::Seconds(2),
               [this](absl::StatusOr<http::Response>) { PollRoutes(); });
}

void GatewayCore::ReportLoad() {
  load_timer_ = 0;
  if (shut_down_)
    return;
  const absl::Time now = loop_.Now();
  const double seconds = std::max(absl::ToDoubleSeconds(now - last_load_report_), 1e-3);
  last_load_report_ = now;
  nlohmann::json fns = nlohmann::json::array();
  for (auto& [name, f] : functions_) {
    fns.push_back({{"name", name},
                   {"rps", static_cast<double>(f->arrivals) / seconds},
                   {"queued", f->queue.size()},
                   {"in_flight", f->in_flight_requests},
                   {"arrivals", f->arrivals},
                   {"arrival_cv", f->window.ArrivalCv()},
                   {"latency_ms", absl::ToDoubleMilliseconds(f->window.MeanSojourn())},
                   {"answered", f->window.answered()},
                   // The controller's dashboard: the window's sojourn percentiles and SVR.
                   {"rejected", f->window.rejected()},
                   {"slo_violations", f->window.SloViolations(f->route.slo_ms)},
                   {"p50_ms", f->window.SojournPercentileMs(0.50)},
                   {"p95_ms", f->window.SojournPercentileMs(0.95)},
                   {"p99_ms", f->window.SojournPercentileMs(0.99)}});
    f->arrivals = 0;
    f->window.Reset();
  }
  nlohmann::json body = {{"at_ms", absl::ToInt64Milliseconds(now - absl::UnixEpoch())},
                         {"functions", std::move(fns)}};
  if (!gateway_id_.empty())
    body["gateway"] = gateway_id_;  // the controller sums the replicas' reports
  client_.Send(controller_, JsonPost("/internal/v1/load", body.dump()), absl::Seconds(2),
               [](absl::StatusOr<http::Response>) {});
  load_timer_ = loop_.RunAfter(options_.load_report, [this] { ReportLoad(); });
}

}  // namespace sluice::runtime::internal
