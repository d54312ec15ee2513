// posix_spawnp with POSIX_SPAWN_SETPGROUP (so SIGTERM reaches a shell's children too) and a
// cleared signal mask/default dispositions (the agent's threads may block signals).
#include "runtime/agent/instance_process.h"

#include <fcntl.h>
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

std::vector<std::string> ChildEnv(const ProcessSpec& s) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool drop = false;
    for (const auto& [k, v] : s.env) drop = drop || k == name;
    for (const auto& k : s.unset_env) drop = drop || k == name;
    if (!drop) env.push_back(entry);
  }
  for (const auto& [k, v] : s.env) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

absl::StatusOr<pid_t> SpawnProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("SpawnProcess: empty argv");
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open log ", spec.log_path, ": ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log, STDERR_FILENO);
  // Nothing else of the agent's: an inherited listening socket (the agent API's) would keep the
  // agent's port bound by the instance, and a restarted agent could not listen on it again.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> env = ChildEnv(spec);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(log);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("cannot start '", spec.argv[0], "': ", std::strerror(rc)));
  }
  return pid;
}

void SignalProcessGroup(pid_t pid, int signal) {
  if (pid <= 0) return;
  if (kill(-pid, signal) != 0) kill(pid, signal);  // the group may already be gone
}

std::optional<int> TryReap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace sluice::runtime
