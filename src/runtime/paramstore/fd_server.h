// How instance processes get parameters from the node's store without copying them: the agent
// runs a ParamFdServer on a Unix socket (<run_dir>/params.sock); an instance (ParamClient,
// env SLUICE_PARAMS_SOCKET + SLUICE_PARAMS_MODEL) sends the model name and receives the model's
// sealed arena chunks (memfds) over SCM_RIGHTS, which it maps read-only into one contiguous
// view. The connection holds a pin on the model for as long as it stays open, so a crashed
// instance unpins by dying (the kernel closes the socket).
// Protocol: client "<model>\n"; server "OK <bytes> <chunk_bytes> <chunks>\n", then the chunk
// fds in order, up to kFdsPerMessage per message (each message one byte 'F' carrying them); or
// "ERR <code> <message>\n".
// Thread safety: the server runs one accept thread and one thread per connection (reaped as
// they end); Stop() joins them. ParamClient is thread-compatible.
#ifndef SLUICE_RUNTIME_PARAMSTORE_FD_SERVER_H_
#define SLUICE_RUNTIME_PARAMSTORE_FD_SERVER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/paramstore/param_store.h"
#include "runtime/paramstore/segment.h"
#include "runtime/paramstore/thread_set.h"

namespace sluice::runtime {

class ParamFdServer {
 public:
  // Binds `socket_path` (an existing file there is replaced). Unavailable when it cannot.
  static absl::StatusOr<std::unique_ptr<ParamFdServer>> Start(ParamStore& store,
                                                              const std::string& socket_path);
  ~ParamFdServer();  // Stop()s
  // Closes every connection (unpinning) and removes the socket file. Idempotent.
  void Stop();
  const std::string& socket_path() const { return path_; }
  // Connection threads held (running, or finished and not yet reaped): for tests.
  size_t threads_held() const { return threads_.held(); }

 private:
  ParamFdServer(ParamStore& store, std::string path, int fd)
      : store_(store), path_(std::move(path)), listen_fd_(fd) {}
  void AcceptLoop();
  void Serve(int fd);

  ParamStore& store_;
  const std::string path_;
  const int listen_fd_;
  std::thread accept_thread_;
  ThreadSet threads_;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<int> fds_ ABSL_GUARDED_BY(mu_);
};

// The instance side: the mapped segment plus the connection that pins it (closed, unpinning,
// when this object goes).
class ParamClient {
 public:
  // NotFound/Unavailable/ResourceExhausted as the store answered; Unavailable when the socket
  // cannot be reached.
  // `populate`: fault the whole view in now (MAP_POPULATE), so that later reads take no page
  // faults (a standby instance preparing before it is needed).
  static absl::StatusOr<std::unique_ptr<ParamClient>> Open(const std::string& socket_path,
                                                           const std::string& model,
                                                           bool populate = false);
  // The same without mapping: the instance keeps the chunk fds (fds(), chunk_bytes()) and
  // reads them with pread(2), e.g. into a pinned staging buffer for the device copy; data() is
  // nullptr. Chunk i holds bytes [i * chunk_bytes, (i + 1) * chunk_bytes) of the model.
  static absl::StatusOr<std::unique_ptr<ParamClient>> OpenFds(const std::string& socket_path,
                                                              const std::string& model);
  ~ParamClient();
  const char* data() const { return segment_ ? segment_->data() : nullptr; }
  int64_t size() const { return size_; }
  int64_t chunk_bytes() const { return chunk_bytes_; }
  const std::vector<int>& fds() const { return fds_; }

 private:
  enum class Mode { kMap, kMapPopulate, kFds };
  static absl::StatusOr<std::unique_ptr<ParamClient>> OpenImpl(const std::string& socket_path,
                                                               const std::string& model,
                                                               Mode mode);
  ParamClient(int conn, int64_t size, int64_t chunk_bytes)
      : conn_(conn), size_(size), chunk_bytes_(chunk_bytes) {}
  int conn_;
  int64_t size_;
  int64_t chunk_bytes_;
  std::unique_ptr<ParamSegment> segment_;  // kMap*
  std::vector<int> fds_;                   // kFds (owned)
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_FD_SERVER_H_
