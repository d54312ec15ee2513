// Subprocess over posix_spawn: the environment is the parent's with the requested changes, the
// stdout pipe is close-on-exec on the parent side, and ReadLine polls the pipe with a timeout.
#include "runtime/common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace sluice::runtime {
namespace {

std::vector<std::string> ChildEnv(const SpawnOptions& o) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : o.env) replaced = replaced || k == name;
    for (const auto& k : o.unset_env) replaced = replaced || k == name;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [k, v] : o.env) env.push_back(k + "=" + v);
  return env;
}

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return absl::InvalidArgumentError("Subprocess: empty argv");
  int fds[2] = {-1, -1};
  if (o.capture_stdout && pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe2");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (o.capture_stdout) posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (o.discard_stderr) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  std::vector<std::string> env = ChildEnv(o);
  std::vector<char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (o.capture_stdout) close(fds[1]);
  if (rc != 0) {
    if (o.capture_stdout) close(fds[0]);
    errno = rc;
    return Errno(absl::StrCat("posix_spawn ", o.argv[0]));
  }
  return std::unique_ptr<Subprocess>(new Subprocess(pid, fds[0]));
}

Subprocess::~Subprocess() {
  if (!reaped_) {
    Kill(SIGKILL);
    (void)Wait();
  }
  if (out_fd_ >= 0) close(out_fd_);
}

absl::StatusOr<std::string> Subprocess::ReadLine(absl::Duration timeout) {
  if (out_fd_ < 0) return absl::FailedPreconditionError("stdout not captured");
  while (true) {
    if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    pollfd p{out_fd_, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
    if (n == 0) return absl::DeadlineExceededError("no line from child in time");
    if (n < 0 && errno != EINTR) return Errno("poll");
    char buf[4096];
    const ssize_t got = read(out_fd_, buf, sizeof(buf));
    if (got == 0) return absl::NotFoundError("child closed stdout");
    if (got < 0 && errno != EINTR && errno != EAGAIN) return Errno("read");
    if (got > 0) buffer_.append(buf, static_cast<size_t>(got));
  }
}

void Subprocess::Kill(int signal) {
  if (!reaped_) kill(pid_, signal);
}

absl::StatusOr<int> Subprocess::Wait() {
  if (reaped_) return absl::FailedPreconditionError("already reaped");
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return Errno("waitpid");
  }
  reaped_ = true;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace sluice::runtime
