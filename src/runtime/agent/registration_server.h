// RegistrationServer: the node's token-server socket (AF_UNIX, SOCK_STREAM). Authenticates each
// connection with SO_PEERCRED, routes a hello to the TokenServer of the GPU it names, answers
// welcome or reject, and keeps the connection: its EOF (client exit or crash) retires the slot.
// Also serves agent control messages (control_protocol.h) from privileged peers. Runs on a
// LoopEnv (fd watches); the TokenServers it routes to may run on other loops (they lock).
// Thread safety: AddGpu/RemoveGpu and the destructor may be called from any thread except the
// loop's; everything else happens on the loop thread.
#ifndef SLUICE_RUNTIME_AGENT_REGISTRATION_SERVER_H_
#define SLUICE_RUNTIME_AGENT_REGISTRATION_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "runtime/agent/token_server.h"
#include "runtime/common/loop_env.h"

namespace sluice::runtime {

struct RegistrationOptions {
  std::string socket_path;        // created (a stale file is replaced), mode 0660, unlinked at end
  std::vector<uid_t> allowed_uids;  // clients; empty = any uid
  // Control messages are accepted from the server's own uid and root only.
};

class RegistrationServer {
 public:
  static absl::StatusOr<std::unique_ptr<RegistrationServer>> Create(
      LoopEnv& loop, const RegistrationOptions& options);
  // Closes every connection (their slots stay until reaped: the clients may still run) and the
  // listening socket, and unlinks the path.
  ~RegistrationServer();

  // Routes hellos for `server.gpu_uuid()` to `server` (borrowed; must outlive this object or be
  // removed first).
  void AddGpu(TokenServer& server);
  void RemoveGpu(const std::string& gpu_uuid);
  const std::string& socket_path() const { return options_.socket_path; }

 private:
  struct Conn {
    int fd = -1;
    PeerCred peer;
    LoopEnv::WatchId watch = 0;
    std::string buffer;
    TokenServer* server = nullptr;  // set once admitted
    uint32_t slot = 0;
    uint32_t generation = 0;
  };

  RegistrationServer(LoopEnv& loop, const RegistrationOptions& options, int listen_fd);
  void OnAccept();
  void OnReadable(int fd);
  // Handles one whole message; returns false when the connection should close.
  bool Dispatch(Conn& c, const std::string& msg);
  bool HandleHello(Conn& c, const std::string& msg);
  bool HandleUpdate(Conn& c, const std::string& msg);
  void Close(int fd);

  LoopEnv& loop_;
  const RegistrationOptions options_;
  const int listen_fd_;
  LoopEnv::WatchId listen_watch_ = 0;
  absl::flat_hash_map<int, Conn> conns_;                  // loop thread only
  absl::flat_hash_map<std::string, TokenServer*> gpus_;  // loop thread only
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_REGISTRATION_SERVER_H_
