// ControllerDaemon: wires the store, the event loop, the ControllerCore and the HTTP server.
// Start-up runs on the caller's thread before the server accepts, so the registry and the adopted
// instances are in place when the first request arrives.
#include "runtime/controller/controller_daemon.h"

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/controller/controller_core.h"
#include "runtime/http/http.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/store.h"

namespace sluice::runtime {

absl::StatusOr<std::unique_ptr<ControllerDaemon>> ControllerDaemon::Start(
    const ControllerOptions& options) {
  if (options.trial_iterations < 1) {
    return absl::InvalidArgumentError("trial_iterations: must be >= 1");
  }
  if (options.node_poll <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("node_poll: must be > 0");
  }
  std::unique_ptr<ControllerDaemon> d(new ControllerDaemon());
  SLUICE_ASSIGN_OR_RETURN(d->loop_, http::EventLoop::Create());
  if (options.store_path.empty()) {
    d->store_ = std::make_unique<MemoryStore>();
  } else {
    // --store URI: sqlite:PATH or a path (embedded default), etcd://HOST:PORT, memory:.
    SLUICE_ASSIGN_OR_RETURN(d->store_, OpenStore(options.store_path, *d->loop_));
  }
  d->controller_ = std::make_unique<ControllerCore>(options, *d->loop_, *d->store_);
  // Init's timers and agent calls belong to the loop thread: run it there and wait.
  std::promise<absl::Status> init;
  d->loop_->Post([&] { init.set_value(d->controller_->Init()); });
  SLUICE_RETURN_IF_ERROR(init.get_future().get());
  http::ServerOptions so;
  so.host = options.host;
  so.port = options.port;
  SLUICE_ASSIGN_OR_RETURN(d->server_,
                          http::Server::Start(*d->loop_, so, d->controller_->MakeRouter()));
  d->port_ = d->server_->port();
  d->loop_->Post([c = d->controller_.get()] { c->StartPolling(); });
  return d;
}

int ControllerDaemon::port() const {
  return port_;
}

void ControllerDaemon::Stop() {
  if (stopped_)
    return;
  stopped_ = true;
  if (server_)
    server_->Stop();
  if (controller_)
    controller_->StopWorkers();
  if (loop_)
    loop_->Stop();
  controller_.reset();  // its client's callbacks died with the loop
  server_.reset();
}

ControllerDaemon::~ControllerDaemon() {
  Stop();
}

}  // namespace sluice::runtime
