// Child daemons are spawned with posix_spawn: stdout and stderr appended to their log, stdin from
// /dev/null, default signal dispositions and an empty signal mask (the supervisor blocks the
// signals it waits for), and a new process group (foreground) or session (--detach) so that a
// terminal's Ctrl-C reaches only the supervisor, which then stops them in order.
#include "runtime/cli/supervisor.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
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

namespace sluice::runtime {
namespace {

const char* const kStopOrder[] = {"gateway", "controller", "agent"};

sigset_t SupervisorSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGCHLD);
  return set;
}

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

std::string LogTail(const std::string& log, size_t lines) {
  std::vector<std::string> all = absl::StrSplit(ReadAll(log), '\n', absl::SkipEmpty());
  if (all.size() > lines)
    all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
  return absl::StrJoin(all, "\n  ");
}

absl::StatusOr<pid_t> SpawnDaemon(const std::string& exe, const std::vector<std::string>& args,
                                  const std::string& log, bool detach) {
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
                                      (detach ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP));
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

// The port from the daemon's {"event":"listening","daemon":name,"port":p} line in its log.
absl::StatusOr<int> WaitListening(const std::string& name, pid_t pid, const std::string& log,
                                  absl::Time deadline) {
  while (true) {
    for (absl::string_view line : absl::StrSplit(ReadAll(log), '\n')) {
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

struct Launch {
  std::string name;
  std::vector<std::string> args;
  std::string health_path;
};

absl::Status StartOne(const UpOptions& o, const Launch& l, DaemonsFile& file) {
  const std::string log = absl::StrCat(o.home, "/logs/", l.name, ".log");
  std::error_code ec;
  std::filesystem::rename(log, log + ".1", ec);  // keep the previous run's log once
  SLUICE_ASSIGN_OR_RETURN(const pid_t pid, SpawnDaemon(o.self_exe, l.args, log, o.detach));
  file.daemons[l.name] = {pid, 0, log};
  const absl::Time deadline = absl::Now() + o.start_timeout;
  absl::StatusOr<int> port = WaitListening(l.name, pid, log, deadline);
  absl::Status s = port.status();
  if (port.ok()) {
    file.daemons[l.name].port = *port;
    s = WaitHealthy(l.name, pid, *port, l.health_path, deadline);
  }
  if (s.ok())
    return s;
  return absl::Status(
      s.code(), absl::StrCat(s.message(), "; last lines of ", log, ":\n  ", LogTail(log, 15)));
}

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& t) {
  head.insert(head.end(), t.begin(), t.end());
  return head;
}

}  // namespace

absl::StatusOr<DaemonsFile> StartDaemons(const UpOptions& o) {
  std::error_code ec;
  std::filesystem::create_directories(o.home + "/logs", ec);
  std::filesystem::create_directories(o.home + "/run", ec);
  if (ec)
    return absl::InternalError(absl::StrCat(o.home, ": cannot create: ", ec.message()));
  DaemonsFile file;
  auto local = [&file](const std::string& d) {
    return absl::StrCat("127.0.0.1:", file.daemons[d].port);
  };
  absl::Status s =
      StartOne(o,
               {"agent",
                With({"agent", "--port", absl::StrCat(o.agent_port), "--run-dir", o.home + "/run"},
                     o.agent_args),
                "/healthz"},
               file);
  if (s.ok()) {
    s = StartOne(o,
                 {"controller",
                  With({"controller", "--port", absl::StrCat(o.controller_port), "--store",
                        o.store.empty() ? o.home + "/controller.db" : o.store, "--agents",
                        local("agent")},
                       o.controller_args),
                  "/healthz"},
                 file);
  }
  if (s.ok()) {
    s = StartOne(o,
                 {"gateway",
                  With({"gateway", "--port", absl::StrCat(o.gateway_port), "--controller",
                        local("controller")},
                       o.gateway_args),
                  "/v2/health/live"},
                 file);
  }
  if (!s.ok()) {
    StopDaemons(file, o.stop_timeout);
    return s;
  }
  return file;
}

void StopDaemons(const DaemonsFile& file, absl::Duration timeout) {
  for (const char* name : kStopOrder) {
    auto it = file.daemons.find(name);
    if (it == file.daemons.end() || !DaemonAlive(it->second.pid, name))
      continue;
    const pid_t pid = it->second.pid;
    kill(pid, SIGTERM);
    const absl::Time deadline = absl::Now() + timeout;
    while (DaemonAlive(pid, name) && absl::Now() < deadline)
      absl::SleepFor(absl::Milliseconds(20));
    if (DaemonAlive(pid, name)) {
      std::fprintf(stderr, "sluice: %s (pid %d) ignored SIGTERM for %s; sending SIGKILL\n", name,
                   static_cast<int>(pid), absl::FormatDuration(timeout).c_str());
      kill(pid, SIGKILL);
      const absl::Time kill_deadline = absl::Now() + absl::Seconds(2);
      while (DaemonAlive(pid, "") && absl::Now() < kill_deadline) {
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
  }
}

namespace {

void PrintStarted(const DaemonsFile& file, const std::string& path) {
  for (const char* name : {"agent", "controller", "gateway"}) {
    const DaemonEntry& d = file.daemons.at(name);
    std::printf("%-10s 127.0.0.1:%-5d pid %-7d log %s\n", name, d.port, static_cast<int>(d.pid),
                d.log.c_str());
  }
  std::printf("state: %s\n", path.c_str());
  std::fflush(stdout);
}

// Foreground: waits for SIGINT/SIGTERM (0) or the death of a daemon (1).
int Supervise(const DaemonsFile& file) {
  const sigset_t set = SupervisorSignals();
  while (true) {
    siginfo_t info;
    const int sig = sigtimedwait(&set, &info, nullptr);
    if (sig == SIGINT || sig == SIGTERM)
      return 0;
    for (const auto& [name, d] : file.daemons) {
      if (!DaemonAlive(d.pid, name)) {
        std::fprintf(stderr, "sluice up: the %s daemon exited; see %s\n", name.c_str(),
                     d.log.c_str());
        return 1;
      }
    }
  }
}

}  // namespace

int RunUp(const UpOptions& o) {
  const std::string path = DaemonsFilePath(o.home);
  absl::StatusOr<std::optional<DaemonsFile>> existing = ReadDaemonsFile(path);
  if (!existing.ok()) {
    std::fprintf(stderr, "sluice up: replacing unreadable %s\n", path.c_str());
  } else if (existing->has_value() && AnyAlive(**existing)) {
    std::fprintf(stderr, "sluice up: already up (see %s)\n", path.c_str());
    return 1;
  }
  const sigset_t set = SupervisorSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  absl::StatusOr<DaemonsFile> file = StartDaemons(o);
  if (!file.ok()) {
    std::fprintf(stderr, "sluice up: %s\n", std::string(file.status().message()).c_str());
    return 1;
  }
  file->supervisor_pid = o.detach ? 0 : getpid();
  if (absl::Status s = WriteDaemonsFile(path, *file); !s.ok()) {
    std::fprintf(stderr, "sluice up: %s\n", std::string(s.message()).c_str());
    StopDaemons(*file, o.stop_timeout);
    return 1;
  }
  PrintStarted(*file, path);
  if (o.detach)
    return 0;
  std::printf("running in the foreground; Ctrl-C stops the daemons\n");
  std::fflush(stdout);
  const int rc = Supervise(*file);
  StopDaemons(*file, o.stop_timeout);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::printf("stopped\n");
  return rc;
}

int RunDown(const std::string& home, absl::Duration timeout) {
  const std::string path = DaemonsFilePath(home);
  absl::StatusOr<std::optional<DaemonsFile>> file = ReadDaemonsFile(path);
  if (!file.ok()) {
    std::fprintf(stderr, "sluice down: %s\n", std::string(file.status().message()).c_str());
    return 1;
  }
  std::error_code ec;
  if (!file->has_value()) {
    std::fprintf(stderr, "sluice down: not running (no %s)\n", path.c_str());
    return 1;
  }
  const DaemonsFile& f = **file;
  if (!AnyAlive(f)) {
    std::filesystem::remove(path, ec);
    std::fprintf(stderr, "sluice down: not running (removed the stale %s)\n", path.c_str());
    return 1;
  }
  if (DaemonAlive(f.supervisor_pid, "up")) {
    // The foreground supervisor stops its children in order and removes the file itself.
    kill(f.supervisor_pid, SIGTERM);
    const absl::Time deadline = absl::Now() + 3 * timeout + absl::Seconds(2);
    while (DaemonAlive(f.supervisor_pid, "up") && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  StopDaemons(f, timeout);
  std::filesystem::remove(path, ec);
  std::printf("stopped (%s)\n", home.c_str());
  return 0;
}

}  // namespace sluice::runtime
