// TrainingLoop: the HTTP handlers only queue trial requests; the Run thread (the one that owns
// the GPU context) runs their steps between training steps, so steps never run concurrently.
#include "runtime/sdk/training.h"

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/sdk/instance_env.h"
#include "runtime/sdk/shutdown.h"

namespace sluice::runtime {

absl::StatusOr<TrainingOptions> TrainingOptions::FromEnv(const std::string& default_name,
                                                         int64_t default_iterations) {
  TrainingOptions o;
  SLUICE_ASSIGN_OR_RETURN(InstanceAddress a, ReadInstanceAddress(default_name));
  o.name = std::move(a.name);
  o.host = std::move(a.host);
  o.port = a.port;
  o.iterations = default_iterations;
  if (const char* it = std::getenv("SLUICE_ITERATIONS"); it != nullptr && *it != '\0') {
    if (!absl::SimpleAtoi(it, &o.iterations)) {
      o.iterations = 0;
    }
  }
  if (o.iterations < 1) {
    return absl::InvalidArgumentError("environment SLUICE_ITERATIONS: must be an integer >= 1");
  }
  return o;
}

absl::StatusOr<std::unique_ptr<TrainingLoop>> TrainingLoop::Start(TrainingOptions options) {
  std::unique_ptr<TrainingLoop> t(new TrainingLoop);
  t->options_ = std::move(options);
  SLUICE_ASSIGN_OR_RETURN(t->loop_, http::EventLoop::Create());
  http::Router router;
  t->Route(router);
  http::ServerOptions so;
  so.host = t->options_.host;
  so.port = t->options_.port;
  SLUICE_ASSIGN_OR_RETURN(t->server_, http::Server::Start(*t->loop_, so, std::move(router)));
  return t;
}

TrainingLoop::~TrainingLoop() {
  if (server_ != nullptr) {  // null when Start() failed
    server_->Stop();
  }
  if (loop_ != nullptr) {
    loop_->Stop();
  }
}

int TrainingLoop::port() const {
  return server_->port();
}

void TrainingLoop::Stop() {
  stop_.store(true);
}

void TrainingLoop::Route(http::Router& router) {
  router.Handle("GET", "/v2/health/live", [](http::Request&, http::Responder respond) {
    respond(http::JsonResponse(200, R"({"live":true})"));
  });
  router.Handle("GET", "/v2/health/ready", [this](http::Request&, http::Responder respond) {
    respond(running_.load() ? http::JsonResponse(200, R"({"ready":true})")
                            : http::ErrorResponse(503, "not ready"));
  });
  router.Handle("GET", "/sluice/v1/stats", [this](http::Request&, http::Responder respond) {
    const nlohmann::json j = {{"in_flight", running_.load() ? 1 : 0},
                              {"served", completed_.load()},
                              {"batches", completed_.load()},
                              {"iterations", options_.iterations},
                              {"steps", steps_.load()},
                              {"trials_queued", QueuedTrials()}};
    respond(http::JsonResponse(200, j.dump()));
  });
  router.Handle("POST", "/sluice/v1/trial", [this](http::Request& req, http::Responder respond) {
    absl::StatusOr<TrialRequest> t = ParseTrialRequest(req.body);
    if (!t.ok()) {
      return respond(http::ErrorResponse(400, std::string(t.status().message())));
    }
    t->batch = 1;  // one iteration is one training step
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return respond(http::ErrorResponse(409, "training has finished"));
    }
    trials_.push_back({*t, std::move(respond)});
  });
}

int64_t TrainingLoop::QueuedTrials() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(trials_.size());
}

absl::Status TrainingLoop::ServeTrials(const StepFn& step) {
  while (true) {
    PendingTrial trial;
    {
      absl::MutexLock lock(&mu_);
      if (trials_.empty()) {
        return absl::OkStatus();
      }
      trial = std::move(trials_.front());
      trials_.pop_front();
    }
    std::vector<absl::Duration> latencies;
    for (int k = 0; k < trial.request.iterations; ++k) {
      const absl::Time start = loop_->Now();
      absl::Status s = step(steps_.load());
      ++steps_;
      latencies.push_back(loop_->Now() - start);
      if (!s.ok()) {
        trial.respond(http::ErrorResponse(500, absl::StrCat("trial: step failed: ", s.message())));
        return s;
      }
    }
    const int64_t memory = options_.memory_bytes ? options_.memory_bytes() : 0;
    trial.respond(http::JsonResponse(
        200, TrialJson(SummarizeTrial(1, std::move(latencies), memory), trial.request).dump()));
  }
}

absl::Status TrainingLoop::Run(const StepFn& step) {
  running_.store(true);
  absl::Status status;
  while (status.ok() && completed_.load() < options_.iterations && !stop_.load() &&
         !ShutdownRequested()) {
    status = ServeTrials(step);
    if (!status.ok()) {
      break;
    }
    status = step(steps_.load());
    ++steps_;
    if (status.ok()) {
      ++completed_;
    }
  }
  running_.store(false);
  std::deque<PendingTrial> left;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    left.swap(trials_);
  }
  for (PendingTrial& t : left) {
    t.respond(http::ErrorResponse(409, "training has finished"));
  }
  server_->Stop();
  return status;
}

int RunTraining(const std::string& default_name, int64_t default_iterations,
                const std::function<void(TrainingOptions&)>& configure,
                const std::function<absl::StatusOr<StepFn>()>& setup) {
  absl::StatusOr<TrainingOptions> options =
      TrainingOptions::FromEnv(default_name, default_iterations);
  absl::Status s = InstallShutdownHandlers();
  if (!s.ok() || !options.ok()) {
    std::fprintf(stderr, "%s: %s\n", default_name.c_str(),
                 (s.ok() ? options.status() : s).ToString().c_str());
    return 1;
  }
  if (configure) {
    configure(*options);
  }
  absl::StatusOr<std::unique_ptr<TrainingLoop>> loop = TrainingLoop::Start(*options);
  if (!loop.ok()) {
    std::fprintf(stderr, "%s: %s\n", default_name.c_str(), loop.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<StepFn> step = setup();
  if (step.ok()) {
    std::fprintf(stdout, "{\"event\":\"ready\",\"port\":%d}\n", (*loop)->port());
    std::fflush(stdout);
  }
  s = step.ok() ? (*loop)->Run(*step) : step.status();
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", default_name.c_str(), s.ToString().c_str());
    return 1;
  }
  std::fprintf(stdout, "{\"event\":\"done\",\"iterations\":%lld}\n",
               static_cast<long long>((*loop)->completed()));
  std::fflush(stdout);
  return 0;
}

}  // namespace sluice::runtime
