// ControllerDaemon: wires the store, the event loop, the ControllerCore and the HTTP server.
// Start-up runs on the caller's thread before the server accepts, so the registry and the adopted
// instances are in place when the first request arrives.
#include "runtime/controller/controller_daemon.h"

#include <algorithm>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/registry/policy_registry.h"
#include "runtime/controller/controller_core.h"
#include "runtime/http/http.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/store.h"

namespace sluice::runtime {

std::string UnknownPolicyMessage(std::string_view name) {
  const std::vector<std::string> known = core::KnownPolicies();
  if (std::find(known.begin(), known.end(), name) != known.end())
    return "";
  return absl::StrCat("unknown policy '", std::string(name), "' (known: ", absl::StrJoin(known, ", "), ")");
}

absl::StatusOr<std::unique_ptr<ControllerDaemon>> ControllerDaemon::Start(
    const ControllerOptions& options) {
  if (options.trial_iterations < 1) {
    return absl::InvalidArgumentError("trial_iterations: must be >= 1");
  }
  if (options.node_poll <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("node_poll: must be > 0");
  }
  if (options.elect && options.leader_ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError("leader_ttl: must be >= 1 s");
  }
  if (options.cluster_tick <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("cluster_tick: must be > 0");
  }
  if (std::string bad = UnknownPolicyMessage(options.default_policy); !bad.empty())
    return absl::InvalidArgumentError(absl::StrCat("default_policy: ", bad));
  std::unique_ptr<ControllerDaemon> d(new ControllerDaemon());
  SLUICE_ASSIGN_OR_RETURN(d->loop_, http::EventLoop::Create());
  Store* store = options.shared_store;
  if (store == nullptr) {
    if (options.store_path.empty()) {
      d->store_ = std::make_unique<MemoryStore>();
    } else {  // a file path as before, or a URI (sqlite:PATH, etcd://HOST:PORT): OpenStore
      SLUICE_ASSIGN_OR_RETURN(d->store_, OpenStore(options.store_path, *d->loop_));
    }
    store = d->store_.get();
  }
  d->controller_ = std::make_unique<ControllerCore>(options, *d->loop_, *store);
  // Init's timers and agent calls belong to the loop thread: run it there and wait. With
  // `elect`, Init runs when this controller wins the election (controller_cluster.cc).
  if (!options.elect) {
    std::promise<absl::Status> init;
    d->loop_->Post([&] { init.set_value(d->controller_->Init()); });
    SLUICE_RETURN_IF_ERROR(init.get_future().get());
  }
  http::ServerOptions so;
  so.host = options.host;
  so.port = options.port;
  SLUICE_ASSIGN_OR_RETURN(d->server_,
                          http::Server::Start(*d->loop_, so, d->controller_->MakeRouter()));
  d->port_ = d->server_->port();
  d->loop_->Post([c = d->controller_.get(), elect = options.elect, port = d->port_] {
    if (!elect)
      c->StartPolling();
    c->StartCluster(port);
  });
  return d;
}

int ControllerDaemon::port() const {
  return port_;
}

bool ControllerDaemon::leading() const {
  return controller_ != nullptr && controller_->Acting();
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

void ControllerDaemon::StopAsIfCrashed() {
  if (!stopped_ && controller_ && loop_) {
    std::promise<void> done;
    loop_->Post([&] {
      controller_->AbandonLeadership();
      done.set_value();
    });
    done.get_future().wait();
  }
  Stop();
}

ControllerDaemon::~ControllerDaemon() {
  Stop();
}

}  // namespace sluice::runtime
