// Subprocess: a child process started with posix_spawn, its stdout captured through a pipe and
// read line by line. Used by the node CLI (share-test workers) and by integration tests that
// start emulated-GPU programs. Thread-compatible: one owner thread per object.
#ifndef SLUICE_RUNTIME_COMMON_SUBPROCESS_H_
#define SLUICE_RUNTIME_COMMON_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::runtime {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the program path
  // Set (or, with an empty value and `unset`, removed) over the parent's environment.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> unset_env;
  bool capture_stdout = true;  // else the child inherits the parent's stdout
  bool discard_stderr = false;  // send the child's stderr to /dev/null
};

class Subprocess {
 public:
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const SpawnOptions& options);
  // Kills (SIGKILL) and reaps the child if it is still running.
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Next line of the child's stdout without its newline. NotFound at end of output,
  // DeadlineExceeded when the child writes nothing for `timeout`.
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  // Sends `signal` to the child (no-op once it has been reaped).
  void Kill(int signal);
  // Waits for the child to exit. Returns its exit code, or 128 + signal if a signal ended it.
  absl::StatusOr<int> Wait();

 private:
  Subprocess(pid_t pid, int out_fd) : pid_(pid), out_fd_(out_fd) {}

  pid_t pid_;
  int out_fd_;  // -1 when stdout is not captured
  bool reaped_ = false;
  std::string buffer_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_COMMON_SUBPROCESS_H_
