// FakeAgent: the agent API over maps guarded by one mutex; instance trial servers run on a second
// loop because http::Server::Start may not be called from its own loop's thread.
#include "runtime/controller/testing/fake_agent.h"

#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {

using nlohmann::json;

double FakeModel::LatencyMs(double share, int batch) const {
  return (base_ms + per_item_ms * batch) * (serial + (1.0 - serial) / share);
}

absl::StatusOr<core::TrialResult> FakeModelRunner::Run(const core::Trial& trial) {
  // The same arithmetic as the trial server, including its JSON round trip in microseconds.
  const double ms = model_.LatencyMs(trial.sm_share, trial.batch);
  core::TrialResult r;
  r.latency = absl::Microseconds(ms * 1000.0);
  r.throughput = trial.batch / (ms / 1000.0);
  r.memory = common::Bytes(model_.memory_bytes);
  return r;
}

absl::StatusOr<std::unique_ptr<FakeAgent>> FakeAgent::Start(int gpus, int64_t gpu_memory_bytes,
                                                            FakeModel model) {
  std::unique_ptr<FakeAgent> a(new FakeAgent());
  a->model_ = model;
  a->gpus_ = gpus;
  a->gpu_memory_bytes_ = gpu_memory_bytes;
  SLUICE_ASSIGN_OR_RETURN(a->loop_, http::EventLoop::Create());
  SLUICE_ASSIGN_OR_RETURN(a->instance_loop_, http::EventLoop::Create());
  SLUICE_ASSIGN_OR_RETURN(a->server_, http::Server::Start(*a->loop_, {}, a->MakeRouter()));
  return a;
}

FakeAgent::~FakeAgent() {
  server_->Stop();
  loop_->Stop();
  for (auto& [id, s] : instance_servers_)
    s->Stop();
  instance_loop_->Stop();
}

std::string FakeAgent::url() const {
  return absl::StrCat("127.0.0.1:", server_->port());
}

void FakeAgent::set_controller(const std::string& url) {
  absl::MutexLock lock(&mu_);
  controller_ = url;
}

std::vector<FakeInstance> FakeAgent::instances() const {
  absl::MutexLock lock(&mu_);
  std::vector<FakeInstance> out;
  for (const auto& [id, i] : instances_)
    out.push_back(i);
  return out;
}

std::vector<FakeDelete> FakeAgent::deletes() const {
  absl::MutexLock lock(&mu_);
  return deletes_;
}

int FakeAgent::trials() const {
  absl::MutexLock lock(&mu_);
  return trials_;
}

int FakeAgent::quota_puts() const {
  absl::MutexLock lock(&mu_);
  return quota_puts_;
}

std::vector<FakeQuotaPut> FakeAgent::quota_put_log() const {
  absl::MutexLock lock(&mu_);
  return quota_put_log_;
}

int FakeAgent::Live(const std::string& function) const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, i] : instances_) {
    n += i.function == function && (i.state == "starting" || i.state == "ready") ? 1 : 0;
  }
  return n;
}

std::string FakeAgent::NodeJson() {
  absl::MutexLock lock(&mu_);
  json gpus = json::array();
  for (int g = 0; g < gpus_; ++g) {
    gpus.push_back(json{{"uuid", absl::StrCat("EMU-FAKE-", g)},
                        {"name", "Fake GPU"},
                        {"index", g},
                        {"sm_count", 108},
                        {"memory_bytes", gpu_memory_bytes_},
                        {"tokens_per_period", 1000},
                        {"period_us", 1000}});
  }
  json instances = json::array();
  for (auto& [id, i] : instances_) {
    if (i.forgotten)
      continue;
    instances.push_back(json{{"id", id},
                             {"function", i.function},
                             {"gpu", i.gpu},
                             {"gpus", i.gpus.empty() ? std::vector<std::string>{i.gpu} : i.gpus},
                             {"port", i.port},
                             {"pid", 1000 + id},
                             {"state", i.state},
                             {"restarts", 0},
                             {"exit_code", nullptr},
                             {"request", i.request},
                             {"limit", i.limit},
                             {"time_quota", i.time_quota},
                             {"max_batch", i.max_batch},
                             {"sm_share", i.request},
                             {"mem_used_bytes", 0},
                             {"in_flight", 0},
                             {"parked", i.parked}});
    if (i.state == "starting")
      i.state = "ready";  // ready from the next poll on
    if (i.state == "draining")
      i.state = "stopped";
  }
  return json{{"node", "node-0"}, {"device", "emulated"}, {"gpus", gpus}, {"instances", instances}}
      .dump();
}

absl::StatusOr<int> FakeAgent::StartInstanceServer(int64_t id) {
  http::Router r;
  r.Handle("POST", "/sluice/v1/trial", [this, id](http::Request& req, http::Responder respond) {
    const json body = json::parse(req.body, nullptr, false);
    const int batch = body.is_discarded() ? 1 : body.value("batch", 1);
    double share = 1;
    {
      absl::MutexLock lock(&mu_);
      ++trials_;
      share = instances_[id].limit;
    }
    const double ms = model_.LatencyMs(share, batch);
    respond(http::JsonResponse(200, json{{"latency_ms", ms},
                                         {"throughput", batch / (ms / 1000.0)},
                                         {"memory_bytes", model_.memory_bytes}}
                                        .dump()));
  });
  r.Handle("POST", "/infer", [this, id](http::Request&, http::Responder respond) {
    absl::MutexLock lock(&mu_);
    FakeInstance& i = instances_[id];
    i.parked = false;  // as the token server: demand unparks
    ++i.requests;
    respond(http::JsonResponse(200, json{{"instance", id}}.dump()));
  });
  AddLlmRoutes(r, id);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<http::Server> s,
                          http::Server::Start(*instance_loop_, {}, std::move(r)));
  const int port = s->port();
  instance_servers_[id] = std::move(s);
  return port;
}

void FakeAgent::HandleStart(http::Request& req, http::Responder respond) {
  const json b = json::parse(req.body, nullptr, false);
  if (b.is_discarded() || !b.contains("id") || !b.contains("function") || !b.contains("gpu")) {
    respond(http::ErrorResponse(400, "field 'id': required"));
    return;
  }
  FakeInstance i;
  i.id = b["id"].get<int64_t>();
  i.function = b["function"].get<std::string>();
  i.gpu = b["gpu"].get<std::string>();
  if (b.contains("gpus") && b["gpus"].is_array())
    i.gpus = b["gpus"].get<std::vector<std::string>>();
  i.restart = b.value("restart", "");
  i.request = b.value("request", 1.0);
  i.limit = b.value("limit", 1.0);
  i.sent_time_quota = b.contains("time_quota");
  i.time_quota = b.value("time_quota", 1.0);
  i.max_batch = b.value("max_batch", 1);
  i.state = "starting";
  if (b.contains("command") && b["command"].is_array())
    i.command = b["command"].get<std::vector<std::string>>();
  i.role = b.contains("env") && b["env"].contains("SLUICE_LLM_ROLE")
               ? b["env"]["SLUICE_LLM_ROLE"].get<std::string>()
               : "colocated";
  {
    absl::MutexLock lock(&mu_);
    if (instances_.contains(i.id)) {
      respond(http::ErrorResponse(409, "duplicate id"));
      return;
    }
    instances_[i.id] = i;
  }
  absl::StatusOr<int> port = StartInstanceServer(i.id);
  if (!port.ok()) {
    respond(http::ErrorResponse(507, std::string(port.status().message())));
    return;
  }
  absl::MutexLock lock(&mu_);
  instances_[i.id].port = *port;
  respond(http::JsonResponse(201, json{{"id", i.id}, {"state", "starting"}}.dump()));
}

void FakeAgent::HandleDelete(http::Request& req, http::Responder respond) {
  const int64_t id = std::stoll(req.param("id"));
  std::string controller;
  {
    absl::MutexLock lock(&mu_);
    if (!instances_.contains(id) || instances_[id].forgotten) {
      respond(http::ErrorResponse(404, "no instance"));
      return;
    }
    if (instances_[id].state == "stopped") {  // as the agent: forget a stopped instance
      instances_[id].forgotten = true;
      respond(http::JsonResponse(202, "{}"));
      return;
    }
    controller = controller_;
  }
  bool routed = false;
  if (!controller.empty()) {
    // The controller must have dropped the instance from its routes before draining it.
    absl::StatusOr<http::Response> r = http::Get(absl::StrCat(controller, "/internal/v1/routes"));
    if (r.ok()) {
      const json routes = json::parse(r->body, nullptr, false);
      for (const json& f : routes["functions"]) {
        for (const json& i : f["instances"])
          routed |= i["id"].get<int64_t>() == id;
      }
    }
  }
  absl::MutexLock lock(&mu_);
  deletes_.push_back({id, req.query_param("drain_ms"), routed});
  instances_[id].state = "draining";
  respond(http::JsonResponse(202, "{}"));
}

void FakeAgent::HandleQuota(http::Request& req, http::Responder respond) {
  const json b = json::parse(req.body, nullptr, false);
  absl::MutexLock lock(&mu_);
  const int64_t id = std::stoll(req.param("id"));
  if (b.is_discarded() || !instances_.contains(id)) {
    respond(http::ErrorResponse(404, "no instance"));
    return;
  }
  ++quota_puts_;
  FakeInstance& i = instances_[id];
  i.request = b.value("request", 1.0);
  i.limit = b.value("limit", 1.0);
  FakeQuotaPut put{id, i.request, i.limit, std::nullopt};
  if (b.contains("time_quota")) {  // as the agent: an absent field is kept
    i.time_quota = b["time_quota"].get<double>();
    put.time_quota = i.time_quota;
  }
  quota_put_log_.push_back(put);
  respond(http::JsonResponse(200, "{}"));
}

void FakeAgent::HandlePark(http::Request& req, http::Responder respond) {
  const json b = json::parse(req.body, nullptr, false);
  absl::MutexLock lock(&mu_);
  const int64_t id = std::stoll(req.param("id"));
  if (b.is_discarded() || !b.contains("parked") || !b["parked"].is_boolean() ||
      !instances_.contains(id)) {
    respond(http::ErrorResponse(404, "no instance"));
    return;
  }
  instances_[id].parked = b["parked"].get<bool>();
  park_log_.push_back({id, instances_[id].parked});
  respond(http::JsonResponse(200, "{}"));
}

std::vector<FakePark> FakeAgent::park_log() const {
  absl::MutexLock lock(&mu_);
  return park_log_;
}

void FakeAgent::SetNodeReportDelay(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  node_report_delay_ = d;
}

std::vector<std::string> FakeAgent::params_deletes() const {
  absl::MutexLock lock(&mu_);
  return params_deletes_;
}

http::Router FakeAgent::MakeRouter() {
  http::Router r;
  r.Handle("GET", "/agent/v1/node", [this](http::Request&, http::Responder respond) {
    absl::Duration delay;
    {
      absl::MutexLock lock(&mu_);
      delay = node_report_delay_;
    }
    http::Response report = http::JsonResponse(200, NodeJson());
    if (delay <= absl::ZeroDuration()) {
      respond(std::move(report));
      return;
    }
    loop_->RunAt(loop_->Now() + delay,
                 [respond = std::move(respond), report = std::move(report)]() mutable {
                   respond(std::move(report));
                 });
  });
  r.Handle("POST", "/agent/v1/instances", [this](http::Request& req, http::Responder respond) {
    HandleStart(req, std::move(respond));
  });
  r.Handle("PUT", "/agent/v1/instances/{id}/quota",
           [this](http::Request& req, http::Responder respond) {
             HandleQuota(req, std::move(respond));
           });
  r.Handle("DELETE", "/agent/v1/instances/{id}",
           [this](http::Request& req, http::Responder respond) {
             HandleDelete(req, std::move(respond));
           });
  r.Handle(
      "PUT", "/agent/v1/instances/{id}/park",
      [this](http::Request& req, http::Responder respond) { HandlePark(req, std::move(respond)); });
  r.Handle("DELETE", "/agent/v1/params/{model}",
           [this](http::Request& req, http::Responder respond) {
             absl::MutexLock lock(&mu_);
             params_deletes_.push_back(req.param("model"));
             respond(http::JsonResponse(200, "{}"));
           });
  r.Handle("GET", "/agent/v1/params", [this](http::Request&, http::Responder respond) {
    absl::MutexLock lock(&mu_);
    if (!params_models_) {
      respond(http::ErrorResponse(404, "no parameter store"));
      return;
    }
    nlohmann::json models = nlohmann::json::array();
    for (const std::string& m : *params_models_)
      models.push_back({{"model", m}, {"ready", true}, {"bytes", 1}, {"pins", 0}});
    respond(http::JsonResponse(200, nlohmann::json{{"models", models}}.dump()));
  });
  return r;
}

void FakeAgent::SetParamsModels(std::vector<std::string> models) {
  absl::MutexLock lock(&mu_);
  params_models_ = std::move(models);
}

}  // namespace sluice::runtime
