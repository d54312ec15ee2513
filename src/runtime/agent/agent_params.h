// AgentParams: the node agent's side of the parameter store (docs/parameter-store.md): the
// node's one ParamStore, its multicast receive port (ChainReceiver), the instances' fd socket
// (ParamFdServer, <run_dir>/params.sock) and the agent API routes under /agent/v1/params.
// Loading from disk and forwarding to a chain take seconds, so those handlers run on worker
// threads (reaped as they finish) and answer through their Responder; the rest answer on the
// loop at once.
// Thread safety: handlers may run on any thread (the store locks itself); the destructor joins
// the workers and stops the receive port and fd server.
#ifndef SLUICE_RUNTIME_AGENT_AGENT_PARAMS_H_
#define SLUICE_RUNTIME_AGENT_AGENT_PARAMS_H_

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/http/http.h"
#include "runtime/paramstore/chain_receiver.h"
#include "runtime/paramstore/fd_server.h"
#include "runtime/paramstore/param_store.h"
#include "runtime/paramstore/thread_set.h"

namespace sluice::runtime {

struct AgentParamsConfig {
  int64_t capacity_bytes = 0;
  double evict_threshold = 0.85;
  std::string host = "127.0.0.1";  // the receive port's address
  int port = 0;
  std::string socket_path;         // the instances' fd socket
  // The store's arena (param_arena.h): when its pages are touched ("start" | "background" |
  // "none": made on first use and kept warm after), and huge pages.
  std::string pretouch = "none";
  bool huge_pages = false;
  // The cluster's shared chain token: sent with every transfer this agent forwards, required
  // of every transfer it receives (docs/parameter-store.md "Authentication"). Empty: the
  // environment's SLUICE_PARAMS_TOKEN, and when that is unset too, no authentication.
  std::string token;
};

class AgentParams {
 public:
  // InvalidArgument naming capacity/threshold/pretouch; Unavailable when a port or socket
  // cannot bind; ResourceExhausted when pretouch "start" cannot get the memory.
  static absl::StatusOr<std::unique_ptr<AgentParams>> Start(const AgentParamsConfig& config);
  ~AgentParams();

  // GET /agent/v1/params, PUT/DELETE /agent/v1/params/{model},
  // POST /agent/v1/params/{model}/forward.
  void AddRoutes(http::Router& router);
  // The environment of an instance started with "params": `model`: SLUICE_PARAMS_SOCKET and
  // SLUICE_PARAMS_MODEL. InvalidArgument naming field 'params' when the store is disabled
  // (`params` null) or does not hold `model`.
  static absl::StatusOr<std::vector<std::pair<std::string, std::string>>> InstanceEnv(
      const AgentParams* params, const std::string& model);

  // Host-cache cold starts (docs/platform.md "Cold starts"): the store's name for the model
  // file at `path`, "file-<hash of path, size and mtime>" (a changed file gets a new name), or
  // "" when `path` is not a regular file.
  static std::string FileModelName(const std::string& path);
  // Loads `path` into the store as `model` on a worker thread, unless the store holds or is
  // filling it; failures (too large, unreadable) are logged and leave the store as it was.
  void CacheInBackground(const std::string& model, const std::string& path);

  ParamStore& store() { return *store_; }
  std::string receive_address() const { return receiver_->address(); }
  size_t workers_held() const { return workers_.held(); }  // for tests

 private:
  AgentParams() = default;
  http::Response List() const;
  http::Response Delete(const std::string& model);
  // Runs `work` on a worker thread and answers with its response.
  void Defer(http::Responder respond, std::function<http::Response()> work);

  AgentParamsConfig config_;
  std::unique_ptr<ParamStore> store_;
  std::unique_ptr<ChainReceiver> receiver_;
  std::unique_ptr<ParamFdServer> fd_server_;
  ThreadSet workers_;
  absl::Mutex caching_mu_;
  std::set<std::string> caching_ ABSL_GUARDED_BY(caching_mu_);  // CacheInBackground in flight
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_AGENT_PARAMS_H_
