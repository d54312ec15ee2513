// Owns the loop, the server, the client and the core; wires the KServe v2 routes to the core.
// Shutdown order matters: the core's timers are cancelled on the loop first, then the server
// and the loop stop, and only then are the client and the core destroyed.
#include "runtime/gateway/gateway_daemon.h"

#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "common/status.h"
#include "runtime/gateway/gateway_core.h"

namespace sluice::runtime {

struct GatewayDaemon::Impl {
  GatewayOptions options;
  std::unique_ptr<http::EventLoop> loop;
  std::unique_ptr<http::Client> client;
  GatewayMetrics metrics;
  std::unique_ptr<internal::GatewayCore> core;
  std::unique_ptr<http::Server> server;
  bool stopped = false;

  // Runs `fn` on the loop and waits for it.
  template <typename Fn>
  auto OnLoop(Fn fn) const {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    loop->Post([&task] { task(); });
    return result.get();
  }
};

namespace {

http::Router MakeRouter(internal::GatewayCore& core, GatewayMetrics& metrics) {
  http::Router router;
  router.Handle("GET", "/v2/health/live", [](http::Request&, http::Responder respond) {
    respond(http::JsonResponse(200, R"({"live":true})"));
  });
  router.Handle("GET", "/v2/health/ready", [&core](http::Request& req, http::Responder respond) {
    core.HandleReady(req, std::move(respond));
  });
  router.Handle("GET", "/v2", [&core](http::Request& req, http::Responder respond) {
    core.HandleServerMetadata(req, std::move(respond));
  });
  for (const char* model : {"/v2/models/{name}", "/v2/models/{name}/versions/{version}"}) {
    router.Handle("GET", model, [&core](http::Request& req, http::Responder respond) {
      core.HandleModelMetadata(req, std::move(respond));
    });
    router.Handle("GET", absl::StrCat(model, "/ready"),
                  [&core](http::Request& req, http::Responder respond) {
                    core.HandleModelReady(req, std::move(respond));
                  });
  }
  router.Handle("POST", "/v2/models/{name}/infer",
                [&core](http::Request& req, http::Responder respond) {
                  core.HandleInfer(req, std::move(respond));
                });
  router.Handle("GET", "/v1/models", [&core](http::Request& req, http::Responder respond) {
    core.HandleModels(req, std::move(respond));
  });
  router.Handle("POST", "/v1/completions", [&core](http::Request& req, http::Responder respond) {
    core.HandleOpenAi(req, std::move(respond), /*chat=*/false);
  });
  router.Handle("POST", "/v1/chat/completions",
                [&core](http::Request& req, http::Responder respond) {
                  core.HandleOpenAi(req, std::move(respond), /*chat=*/true);
                });
  router.Handle("GET", "/metrics", [&metrics](http::Request&, http::Responder respond) {
    http::Response r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = metrics.Render();
    respond(std::move(r));
  });
  return router;
}

absl::Status Validate(const GatewayOptions& o) {
  if (o.routes_poll <= absl::ZeroDuration() || o.load_report <= absl::ZeroDuration())
    return absl::InvalidArgumentError("gateway: routes_poll and load_report must be > 0");
  if (o.max_retries < 0 || o.max_batches_per_instance < 0)
    return absl::InvalidArgumentError(
        "gateway: max_retries and max_batches_per_instance must be >= 0");
  if (o.port < 0 || o.port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("gateway: port ", o.port, " out of range"));
  return absl::OkStatus();
}

}  // namespace

GatewayDaemon::GatewayDaemon() : impl_(std::make_unique<Impl>()) {}

absl::StatusOr<std::unique_ptr<GatewayDaemon>> GatewayDaemon::Start(const GatewayOptions& o) {
  SLUICE_RETURN_IF_ERROR(Validate(o));
  // `controller`: one "host:port" or several, comma-separated (issue 12: follow the leader).
  std::vector<http::Endpoint> controllers;
  for (absl::string_view c : absl::StrSplit(o.controller, ',', absl::SkipEmpty())) {
    absl::StatusOr<http::Endpoint> ep = http::Endpoint::Parse(std::string(c));
    if (!ep.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("controller: '", c, "': ", ep.status().message()));
    }
    controllers.push_back(*ep);
  }
  if (controllers.empty())
    return absl::InvalidArgumentError("controller: at least one host:port");
  const http::Endpoint controller = controllers[0];
  std::unique_ptr<GatewayDaemon> d(new GatewayDaemon());
  Impl& im = *d->impl_;
  im.options = o;
  SLUICE_ASSIGN_OR_RETURN(im.loop, http::EventLoop::Create());
  im.client = std::make_unique<http::Client>(*im.loop);
  im.core =
      std::make_unique<internal::GatewayCore>(o, *im.loop, *im.client, im.metrics, controller);
  http::ServerOptions so;
  so.host = o.host;
  so.port = o.port;
  SLUICE_ASSIGN_OR_RETURN(im.server,
                          http::Server::Start(*im.loop, so, MakeRouter(*im.core, im.metrics)));
  internal::GatewayCore* core = im.core.get();
  core->SetControllers(std::move(controllers),
                       o.id.empty() ? absl::StrCat(o.host, ":", im.server->port()) : o.id);
  im.loop->Post([core] { core->StartControl(); });
  return d;
}

GatewayDaemon::~GatewayDaemon() {
  Stop();
}

int GatewayDaemon::port() const {
  return impl_->server->port();
}

void GatewayDaemon::Stop() {
  Impl& im = *impl_;
  if (im.stopped)
    return;
  im.stopped = true;
  if (im.core != nullptr && im.loop != nullptr) {
    internal::GatewayCore* core = im.core.get();
    im.OnLoop([core] { core->Shutdown(); });
  }
  if (im.server != nullptr)
    im.server->Stop();
  if (im.loop != nullptr)
    im.loop->Stop();
  im.server.reset();
  im.client.reset();
  im.core.reset();
}

int64_t GatewayDaemon::routes_version() const {
  internal::GatewayCore* core = impl_->core.get();
  return impl_->OnLoop([core] { return core->routes_version(); });
}

std::string GatewayDaemon::RenderMetrics() const {
  return impl_->metrics.Render();
}

}  // namespace sluice::runtime
