// WorkerEnv: where the share test's programs are and how to start them: the sluice-spin path,
// libsluice_cuda.so, the emulated driver directory, the chosen device (a private emulated GPU
// per run, removed at the end), the GPU UUID and the token-server socket path. Used by
// RunShareTest and its tests. Thread-compatible.
#ifndef SLUICE_RUNTIME_NODE_CLI_WORKER_ENV_H_
#define SLUICE_RUNTIME_NODE_CLI_WORKER_ENV_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "runtime/common/subprocess.h"
#include "runtime/node_cli/share_test.h"

namespace sluice::runtime {

// InvalidArgument naming the bad option.
[[nodiscard]] absl::Status ValidateShareTestOptions(const ShareTestOptions& o);

class WorkerEnv {
 public:
  // Locates the programs and resolves `o.device` ("auto" probes the real driver first).
  static absl::StatusOr<std::unique_ptr<WorkerEnv>> Create(const ShareTestOptions& o);
  // Removes the private emulated device (its /dev/shm segment), if any.
  ~WorkerEnv();

  const std::string& device() const { return device_; }  // "emulated" or "cuda"
  const std::string& socket_path() const { return socket_path_; }
  const std::string& intercept_lib() const { return intercept_lib_; }
  void set_gpu_uuid(const std::string& uuid) { gpu_uuid_ = uuid; }

  // Starts sluice-spin with `args`; with `preload`, under libsluice_cuda.so registered as
  // `instance` with the token server on socket_path().
  absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(std::vector<std::string> args, bool preload,
                                                    int64_t instance = -1,
                                                    bool quiet = false) const;

 private:
  WorkerEnv() = default;
  SpawnOptions Options(std::vector<std::string> args, bool preload, int64_t instance) const;

  std::string device_;
  std::string spin_path_, intercept_lib_, emulated_dir_;
  std::string emu_uuid_;  // set for the emulated device
  std::string gpu_uuid_;
  std::string socket_path_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_NODE_CLI_WORKER_ENV_H_
