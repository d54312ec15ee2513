// FunctionServer: handlers run on the EventLoop thread and only parse, count and queue; the
// SerialWorker runs the batch handler and answers through the Responder (callable from any
// thread). Drain closes the worker first, so every accepted batch is answered before the
// listener closes.
#include "runtime/sdk/function_server.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

#include "common/status.h"
#include "runtime/sdk/instance_env.h"
#include "runtime/sdk/instance_start.h"
#include "runtime/sdk/shutdown.h"
#include "runtime/sdk/trial.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

http::Response Json(int status, const json& body) {
  return http::JsonResponse(status, body.dump());
}

// Waits until the loop has run everything posted so far (the sends of answered batches), then
// gives their writes a moment to reach the sockets.
void FlushLoop(http::EventLoop& loop) {
  absl::Notification posted, settled;
  loop.Post([&] { posted.Notify(); });
  posted.WaitForNotification();
  loop.RunAfter(absl::Milliseconds(20), [&] { settled.Notify(); });
  settled.WaitForNotification();
}

}  // namespace

absl::StatusOr<FunctionOptions> FunctionOptions::FromEnv(const std::string& default_name) {
  FunctionOptions o;
  SLUICE_ASSIGN_OR_RETURN(InstanceAddress a, ReadInstanceAddress(default_name));
  o.name = std::move(a.name);
  o.host = std::move(a.host);
  o.port = a.port;
  return o;
}

absl::StatusOr<std::unique_ptr<FunctionServer>> FunctionServer::Start(FunctionOptions options,
                                                                      BatchHandler handler) {
  std::unique_ptr<FunctionServer> s(new FunctionServer);
  s->options_ = std::move(options);
  s->handler_ = std::move(handler);
  SLUICE_ASSIGN_OR_RETURN(s->loop_, http::EventLoop::Create());
  s->worker_ = std::make_unique<SerialWorker>();
  http::Router router;
  s->Route(router);
  http::ServerOptions so;
  so.host = s->options_.host;
  so.port = s->options_.port;
  SLUICE_ASSIGN_OR_RETURN(s->server_, http::Server::Start(*s->loop_, so, std::move(router)));
  return s;
}

FunctionServer::~FunctionServer() {
  Drain();
}

void FunctionServer::SetReady(bool ready) {
  ready_.store(ready);
}

int FunctionServer::port() const {
  return server_->port();
}

FunctionStats FunctionServer::stats() const {
  return {in_flight_.load(), served_.load(), batches_.load()};
}

void FunctionServer::Wait() {
  if (InstallShutdownHandlers().ok()) {
    WaitForShutdown();
  }
  Drain();
}

void FunctionServer::Drain() {
  if (drained_.exchange(true)) {
    return;
  }
  draining_.store(true);
  // Start() may have failed part-way: only what exists is stopped.
  if (worker_ != nullptr) {
    worker_->Join();  // every accepted batch has run and called its Responder
  }
  if (server_ != nullptr) {
    FlushLoop(*loop_);
    server_->Stop();
  }
  if (loop_ != nullptr) {
    loop_->Stop();
  }
}

void FunctionServer::Route(http::Router& router) {
  router.Handle("GET", "/v2/health/live", [](http::Request&, http::Responder respond) {
    respond(Json(200, {{"live", true}}));
  });
  auto ready = [this](http::Request&, http::Responder respond) {
    const bool ok = ready_.load() && !draining_.load();
    respond(ok ? Json(200, {{"ready", true}}) : http::ErrorResponse(503, "not ready"));
  };
  router.Handle("GET", "/v2/health/ready", ready);
  router.Handle(
      "GET", "/v2/models/{name}/ready", [this, ready](http::Request& r, http::Responder respond) {
        if (r.param("name") != options_.name) {
          return respond(http::ErrorResponse(404, "unknown model '" + r.param("name") + "'"));
        }
        ready(r, std::move(respond));
      });
  router.Handle(
      "POST", "/v2/models/{name}/infer",
      [this](http::Request& r, http::Responder respond) { OnInfer(r, std::move(respond)); });
  router.Handle("POST", "/sluice/v1/batch", [this](http::Request& r, http::Responder respond) {
    OnBatch(r, std::move(respond));
  });
  router.Handle("POST", "/sluice/v1/trial", [this](http::Request& r, http::Responder respond) {
    OnTrial(r, std::move(respond));
  });
  router.Handle("GET", "/sluice/v1/stats", [this](http::Request&, http::Responder respond) {
    respond(Json(200, StatsJson()));
  });
}

json FunctionServer::StatsJson() const {
  return {{"in_flight", in_flight_.load()},
          {"served", served_.load()},
          {"batches", batches_.load()},
          {"ready", ready_.load() && !draining_.load()},
          {"draining", draining_.load()},
          {"start", StartRecordJson()}};
}

void FunctionServer::Enqueue(int64_t requests, http::Responder respond,
                             absl::AnyInvocable<void(http::Responder)> job) {
  if (draining_.load()) {
    return respond(http::ErrorResponse(503, "draining"));
  }
  if (!ready_.load()) {
    return respond(http::ErrorResponse(503, "not ready"));
  }
  in_flight_ += requests;
  if (options_.handler_on_loop) {
    return job(std::move(respond));
  }
  // The job owns the Responder; a refused job (a Drain raced us) answers 503 instead.
  auto slot = std::make_shared<http::Responder>(std::move(respond));
  const bool accepted =
      worker_->Submit([slot, job = std::move(job)]() mutable { job(std::move(*slot)); });
  if (!accepted) {
    in_flight_ -= requests;
    (*slot)(http::ErrorResponse(503, "draining"));
  }
}

std::vector<InferResult> FunctionServer::RunHandler(std::span<const InferRequest> batch) {
  std::vector<InferResult> results;
  try {
    results = handler_(batch);
  } catch (const std::exception& e) {
    return std::vector<InferResult>(batch.size(),
                                    InferResult::Error(std::string("handler: ") + e.what(), 500));
  }
  if (results.size() != batch.size()) {
    const std::string msg = absl::StrCat("handler returned ", results.size(), " results for ",
                                         batch.size(), " requests");
    return std::vector<InferResult>(batch.size(), InferResult::Error(msg, 500));
  }
  return results;
}

void FunctionServer::OnBatch(http::Request& req, http::Responder respond) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("requests") ||
      !body["requests"].is_array()) {
    return respond(http::ErrorResponse(400, "requests: body must be {\"requests\": [...]}"));
  }
  // Invalid requests are answered in place with an error; the valid ones form the batch.
  const size_t n = body["requests"].size();
  auto requests = std::make_shared<std::vector<InferRequest>>();
  auto errors = std::make_shared<std::vector<std::string>>(n);
  for (size_t i = 0; i < n; ++i) {
    absl::StatusOr<InferRequest> r = MakeInferRequest(std::move(body["requests"][i]));
    if (r.ok()) {
      requests->push_back(*std::move(r));
    } else {
      (*errors)[i] = absl::StrCat("requests[", i, "]: ", r.status().message());
    }
  }
  Enqueue(static_cast<int64_t>(n), std::move(respond),
          [this, n, requests, errors](http::Responder answer) {
            const absl::Time start = loop_->Now();
            std::vector<InferResult> results;
            if (!requests->empty()) {
              results = RunHandler(*requests);
            }
            const double exec_ms = absl::ToDoubleMilliseconds(loop_->Now() - start);
            json responses = json::array();
            size_t next = 0;
            for (size_t i = 0; i < n; ++i) {
              if (!(*errors)[i].empty()) {
                responses.push_back({{"error", (*errors)[i]}, {"code", 400}});
              } else {
                InferResult& r = results[next++];
                responses.push_back(
                    r.ok() ? std::move(r.body)
                           : json{{"error", r.error}, {"code", r.code >= 400 ? r.code : 500}});
              }
            }
            if (!requests->empty()) {
              ++batches_;
            }
            served_ += static_cast<int64_t>(n);
            in_flight_ -= static_cast<int64_t>(n);
            answer(Json(200, {{"responses", std::move(responses)}, {"exec_ms", exec_ms}}));
          });
}

void FunctionServer::OnInfer(http::Request& req, http::Responder respond) {
  if (req.param("name") != options_.name) {
    return respond(http::ErrorResponse(404, "unknown model '" + req.param("name") + "'"));
  }
  absl::StatusOr<InferRequest> parsed = ParseInferRequest(req.body);
  if (!parsed.ok()) {
    return respond(http::ErrorResponse(400, std::string(parsed.status().message())));
  }
  auto request = std::make_shared<InferRequest>(*std::move(parsed));
  Enqueue(1, std::move(respond), [this, request](http::Responder answer) {
    std::vector<InferResult> results = RunHandler(std::span<const InferRequest>(request.get(), 1));
    ++batches_;
    ++served_;
    --in_flight_;
    InferResult& r = results[0];
    answer(r.ok() ? Json(200, r.body) : http::ErrorResponse(r.code >= 400 ? r.code : 500, r.error));
  });
}

void FunctionServer::OnTrial(http::Request& req, http::Responder respond) {
  absl::StatusOr<TrialRequest> trial = ParseTrialRequest(req.body);
  if (!trial.ok()) {
    return respond(http::ErrorResponse(400, std::string(trial.status().message())));
  }
  absl::StatusOr<InferRequest> sample = MakeInferRequest(options_.sample_request);
  if (!sample.ok()) {
    return respond(http::ErrorResponse(
        409, absl::StrCat("function has no valid sample request: ", sample.status().message())));
  }
  Enqueue(0, std::move(respond),
          [this, t = *trial, s = *std::move(sample)](http::Responder answer) {
            std::vector<InferRequest> batch(t.batch, s);
            for (int i = 0; i < t.batch; ++i) {
              batch[i].id = absl::StrCat("trial-", i);
            }
            std::vector<absl::Duration> latencies;
            for (int k = 0; k < t.iterations; ++k) {
              const absl::Time start = loop_->Now();
              std::vector<InferResult> results = RunHandler(batch);
              latencies.push_back(loop_->Now() - start);
              for (const InferResult& r : results) {
                if (!r.ok()) {
                  return answer(http::ErrorResponse(500, "trial: handler failed: " + r.error));
                }
              }
            }
            const int64_t memory = options_.memory_bytes ? options_.memory_bytes() : 0;
            answer(Json(200, TrialJson(SummarizeTrial(t.batch, std::move(latencies), memory), t)));
          });
}

int RunFunction(const std::string& default_name,
                const std::function<void(FunctionOptions&)>& configure,
                const std::function<absl::StatusOr<BatchHandler>()>& load,
                const std::function<absl::Status()>& prestart) {
  if (absl::Status s = InstallShutdownHandlers(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  absl::Time start = absl::Now();
  if (absl::Status s = prestart ? prestart() : absl::OkStatus(); !s.ok()) {
    std::fprintf(stderr, "%s: prestart: %s\n", default_name.c_str(), s.ToString().c_str());
    return 1;
  }
  if (const char* pool = std::getenv("SLUICE_POOL_SOCKET"); pool != nullptr && *pool != '\0') {
    const double prestart_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    UpdateStartRecord([&](StartRecord& r) { r.prestart_ms = prestart_ms; });
    if (absl::Status s = WaitForAssignment(pool); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", default_name.c_str(), s.ToString().c_str());
      return 1;
    }
    start = absl::Now();  // the cold start begins at the handoff
  }
  absl::StatusOr<FunctionOptions> options = FunctionOptions::FromEnv(default_name);
  if (!options.ok()) {
    std::fprintf(stderr, "%s: %s\n", default_name.c_str(), options.status().ToString().c_str());
    return 1;
  }
  if (configure) {
    configure(*options);
  }
  // The handler is set once, before SetReady(true); requests before that are answered 503.
  auto loaded = std::make_shared<BatchHandler>();
  absl::StatusOr<std::unique_ptr<FunctionServer>> server = FunctionServer::Start(
      *std::move(options), [loaded](std::span<const InferRequest> b) { return (*loaded)(b); });
  if (!server.ok()) {
    std::fprintf(stderr, "%s: %s\n", default_name.c_str(), server.status().ToString().c_str());
    return 1;
  }
  const absl::Time load_start = absl::Now();
  absl::StatusOr<BatchHandler> handler = load();
  if (!handler.ok()) {
    std::fprintf(stderr, "%s: load: %s\n", default_name.c_str(),
                 handler.status().ToString().c_str());
    return 1;
  }
  *loaded = *std::move(handler);
  UpdateStartRecord([&](StartRecord& r) {
    r.load_ms = absl::ToDoubleMilliseconds(absl::Now() - load_start);
    r.ready_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  });
  (*server)->SetReady(true);
  std::fprintf(stdout, "{\"event\":\"ready\",\"port\":%d}\n", (*server)->port());
  std::fflush(stdout);
  (*server)->Wait();
  return 0;
}

}  // namespace sluice::runtime
