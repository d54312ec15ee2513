// Child daemons are spawned with posix_spawn: stdout and stderr appended to their log, stdin from
// /dev/null, default signal dispositions and an empty signal mask (the supervisor blocks the
// signals it waits for), and a new process group so that a terminal's Ctrl-C reaches only the
// supervisor, which then stops them in order.
#include "runtime/cli/daemon_launch.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/http/http.h"

extern char** environ;

namespace sluice::runtime::internal {
namespace {

// A SIGINT or SIGTERM arrived while blocked (Ctrl-C during start-up).
bool Interrupted() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The port from the daemon's {"event":"listening","daemon":name,"port":p} line in its log,
// looking only past `offset` (the log's size when this start began: restarts append).
absl::StatusOr<int> WaitListening(const std::string& name, pid_t pid, const std::string& log,
                                  size_t offset, absl::Time deadline) {
  while (true) {
    const std::string text = ReadAll(log);
    for (absl::string_view line : absl::StrSplit(
             absl::string_view(text).substr(std::min(offset, text.size())), '\n')) {
      if (!absl::StartsWith(line, "{"))
        continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("event", "") == "listening" && j.value("daemon", "") == name &&
          j.contains("port") && j["port"].is_number_integer()) {
        return j["port"].get<int>();
      }
    }
    if (!DaemonAlive(pid, ""))
      return absl::UnavailableError(absl::StrCat(name, " exited"));
    if (Interrupted())
      return absl::CancelledError("interrupted");
    if (absl::Now() > deadline)
      return absl::DeadlineExceededError(name + " never listened");
    absl::SleepFor(absl::Milliseconds(50));
  }
}

absl::Status WaitHealthy(const std::string& name, pid_t pid, int port, const std::string& path,
                         absl::Time deadline) {
  http::Request req;
  req.method = "GET";
  req.target = path;
  while (true) {
    absl::StatusOr<http::Response> r = http::Fetch({"127.0.0.1", port}, req, absl::Seconds(1));
    if (r.ok() && r->status == 200)
      return absl::OkStatus();
    if (!DaemonAlive(pid, ""))
      return absl::UnavailableError(absl::StrCat(name, " exited"));
    if (Interrupted())
      return absl::CancelledError("interrupted");
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          name, " did not answer GET ", path, " on port ", port, ": ",
          r.ok() ? absl::StrCat("status ", r->status) : std::string(r.status().message())));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

void PinPort(std::vector<std::string>& args, int port) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--port") {
      args[i + 1] = absl::StrCat(port);
      return;
    }
  }
  args.push_back("--port");
  args.push_back(absl::StrCat(port));
}

}  // namespace

sigset_t SupervisorSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

absl::StatusOr<pid_t> SpawnDaemon(const std::string& exe, const std::vector<std::string>& args,
                                  const std::string& log, bool new_session) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults = SupervisorSignals();
  sigemptyset(&none);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      (new_session ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP));
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("cannot start ", exe, ": ", std::strerror(rc)));
  }
  return pid;
}

std::string LogTail(const std::string& log, size_t lines) {
  std::vector<std::string> all = absl::StrSplit(ReadAll(log), '\n', absl::SkipEmpty());
  if (all.size() > lines)
    all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
  return absl::StrJoin(all, "\n  ");
}

absl::Status StartDaemon(const std::string& exe, const std::string& name, bool rotate_log,
                         absl::Duration timeout, DaemonEntry& entry) {
  std::error_code ec;
  if (rotate_log)
    std::filesystem::rename(entry.log, entry.log + ".1", ec);  // keep the previous run's log once
  const size_t offset = ReadAll(entry.log).size();
  entry.pid = 0;
  SLUICE_ASSIGN_OR_RETURN(entry.pid, SpawnDaemon(exe, entry.args, entry.log, false));
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<int> port = WaitListening(name, entry.pid, entry.log, offset, deadline);
  absl::Status s = port.status();
  if (port.ok()) {
    entry.port = *port;
    PinPort(entry.args, *port);
    s = WaitHealthy(name, entry.pid, *port, entry.health, deadline);
  }
  if (s.ok())
    return s;
  return absl::Status(s.code(), absl::StrCat(s.message(), "; last lines of ", entry.log, ":\n  ",
                                             LogTail(entry.log, 15)));
}

std::string DescribeExit(int wait_status) {
  if (WIFEXITED(wait_status))
    return absl::StrCat("exit code ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return absl::StrCat("signal ", sig, " (", strsignal(sig), ")");
  }
  return absl::StrCat("wait status ", wait_status);
}

}  // namespace sluice::runtime::internal
