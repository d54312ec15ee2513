// Fakes for the gateway tests: real servers, canned behaviour, counters for assertions.
#include "runtime/gateway/testing/fake_platform.h"

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::runtime::testing {
namespace {

using nlohmann::json;

std::unique_ptr<http::Server> StartServer(http::EventLoop& loop, http::Router router) {
  absl::StatusOr<std::unique_ptr<http::Server>> s =
      http::Server::Start(loop, http::ServerOptions{}, std::move(router));
  SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
  return *std::move(s);
}

}  // namespace

FakeController::FakeController() : loop_(*http::EventLoop::Create()) {
  http::Router router;
  router.Handle("GET", "/internal/v1/routes", [this](http::Request&, http::Responder respond) {
    absl::MutexLock lock(&mu_);
    json doc = {{"version", version_}, {"functions", functions_}};
    respond(http::JsonResponse(200, doc.dump()));
  });
  router.Handle("POST", "/internal/v1/wake", [this](http::Request& req, http::Responder respond) {
    absl::MutexLock lock(&mu_);
    wakes_.push_back(json::parse(req.body).value("name", ""));
    respond(http::JsonResponse(200, "{}"));
  });
  router.Handle("POST", "/internal/v1/load", [this](http::Request& req, http::Responder respond) {
    absl::MutexLock lock(&mu_);
    ++load_reports_;
    last_load_ = json::parse(req.body);
    respond(http::JsonResponse(200, "{}"));
  });
  server_ = StartServer(*loop_, std::move(router));
}

FakeController::~FakeController() {
  server_->Stop();
  loop_->Stop();
}

std::string FakeController::url() const {
  return absl::StrCat("127.0.0.1:", server_->port());
}

void FakeController::SetFunctions(json functions) {
  absl::MutexLock lock(&mu_);
  functions_ = std::move(functions);
  ++version_;
}

std::vector<std::string> FakeController::wakes() const {
  absl::MutexLock lock(&mu_);
  return wakes_;
}

int FakeController::load_reports() const {
  absl::MutexLock lock(&mu_);
  return load_reports_;
}

json FakeController::last_load() const {
  absl::MutexLock lock(&mu_);
  return last_load_;
}

FakeInstance::FakeInstance(int64_t id) : id_(id), loop_(*http::EventLoop::Create()) {
  http::Router router;
  router.Handle("POST", "/sluice/v1/batch", [this](http::Request& req, http::Responder respond) {
    OnBatch(req, std::move(respond));
  });
  server_ = StartServer(*loop_, std::move(router));
  port_ = server_->port();
}

FakeInstance::~FakeInstance() {
  Crash();
  loop_->Stop();
}

std::string FakeInstance::url() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void FakeInstance::set_mode(Mode m) {
  absl::MutexLock lock(&mu_);
  mode_ = m;
}

void FakeInstance::OnBatch(http::Request& req, http::Responder respond) {
  absl::MutexLock lock(&mu_);
  json doc = json::parse(req.body);
  batch_sizes_.push_back(static_cast<int>(doc["requests"].size()));
  if (mode_ == Mode::kHold) {
    held_.emplace_back(req.body, std::move(respond));
  } else if (mode_ == Mode::kFail500) {
    respond(http::ErrorResponse(500, "instance broke"));
  } else {
    respond(Answer(req.body, id_));
  }
}

http::Response FakeInstance::Answer(const std::string& body, int64_t id) {
  json responses = json::array();
  const json doc = json::parse(body);
  for (const json& r : doc["requests"]) {
    if (r["inputs"][0]["name"] == "bad") {
      responses.push_back({{"error", "bad input"}});
      continue;
    }
    if (r["inputs"][0]["name"] == "shape") {  // the function blames the request (SDK's code 400)
      responses.push_back({{"error", "wrong shape"}, {"code", 400}});
      continue;
    }
    json out = {{"model_name", "f"},
                {"outputs",
                 {{{"name", "instance"}, {"shape", {1}}, {"datatype", "INT64"}, {"data", {id}}}}}};
    if (r.contains("id"))
      out["id"] = r["id"];
    responses.push_back(out);
  }
  return http::JsonResponse(200, json{{"responses", responses}, {"exec_ms", 0.1}}.dump());
}

void FakeInstance::Release() {
  absl::MutexLock lock(&mu_);
  for (auto& [body, respond] : held_)
    respond(Answer(body, id_));
  held_.clear();
}

void FakeInstance::Crash() {
  if (server_ != nullptr)
    server_->Stop();
  absl::MutexLock lock(&mu_);
  held_.clear();
}

std::vector<int> FakeInstance::batch_sizes() const {
  absl::MutexLock lock(&mu_);
  return batch_sizes_;
}

int FakeInstance::requests_received() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (int b : batch_sizes_)
    n += b;
  return n;
}

json RouteInstanceJson(const FakeInstance& inst, double capacity, const char* state) {
  return {{"id", inst.id()}, {"url", inst.url()}, {"capacity_rps", capacity}, {"state", state},
          {"request", 0.3},  {"limit", 0.6},      {"sm_share", 0.25}};
}

json RouteJson(const std::string& name, int max_batch, int delay_ms, json instances,
               int queue_max) {
  return {{"name", name},           {"kind", "inference"},
          {"state", "ready"},       {"slo_ms", 100},
          {"max_batch", max_batch}, {"max_queue_delay_ms", delay_ms},
          {"queue_max", queue_max}, {"timeout_ms", 30000},
          {"desired", 1},           {"instances", std::move(instances)}};
}

std::string InferBody(const std::string& id, const std::string& input_name) {
  json body = {
      {"id", id},
      {"inputs",
       {{{"name", input_name}, {"shape", {1, 2}}, {"datatype", "FP32"}, {"data", {1.0, 2.0}}}}}};
  return body.dump();
}

}  // namespace sluice::runtime::testing
