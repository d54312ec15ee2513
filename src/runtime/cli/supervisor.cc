// Start-up (fresh or repairing a half-dead installation), the --detach hand-off to a background
// supervisor, and stopping. The restart loop itself is supervise_loop.cc; spawning and the
// health waits are daemon_launch.cc.
#include "runtime/cli/supervisor.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "runtime/cli/daemon_launch.h"
#include "runtime/cli/supervise_loop.h"

namespace sluice::runtime {
namespace {

const char* const kStartOrder[] = {"agent", "controller", "gateway"};
const char* const kStopOrder[] = {"gateway", "controller", "agent"};

std::vector<std::string> With(std::vector<std::string> head, const std::vector<std::string>& t) {
  head.insert(head.end(), t.begin(), t.end());
  return head;
}

// The daemon's entry before its first start: args with the requested port, health path, log.
DaemonEntry Planned(const UpOptions& o, const std::string& name, const DaemonsFile& started) {
  auto local = [&started](const char* d) {
    return absl::StrCat("127.0.0.1:", started.daemons.at(d).port);
  };
  DaemonEntry e;
  e.log = absl::StrCat(o.home, "/logs/", name, ".log");
  e.health = name == "gateway" ? "/v2/health/live" : "/healthz";
  if (name == "agent") {
    e.args = With({"agent", "--port", absl::StrCat(o.agent_port), "--run-dir", o.home + "/run"},
                  o.agent_args);
  } else if (name == "controller") {
    e.args =
        With({"controller", "--port", absl::StrCat(o.controller_port), "--store",
              o.store.empty() ? o.home + "/controller.db" : o.store, "--agents", local("agent")},
             o.controller_args);
  } else {
    e.args = With(
        {"gateway", "--port", absl::StrCat(o.gateway_port), "--controller", local("controller")},
        o.gateway_args);
  }
  return e;
}

std::vector<std::string> DeadDaemons(const DaemonsFile& file) {
  std::vector<std::string> dead;
  for (const auto& [name, d] : file.daemons) {
    if (!DaemonAlive(d.pid, name))
      dead.push_back(name);
  }
  return dead;
}

void PrintStarted(const DaemonsFile& file, const std::string& path) {
  for (const char* name : kStartOrder) {
    auto it = file.daemons.find(name);
    if (it == file.daemons.end())
      continue;
    const DaemonEntry& d = it->second;
    std::printf("%-10s 127.0.0.1:%-5d pid %-7d log %s\n", name, d.port, static_cast<int>(d.pid),
                d.log.c_str());
  }
  std::printf("supervisor pid %d\nstate: %s\n", static_cast<int>(file.supervisor_pid),
              path.c_str());
  std::fflush(stdout);
}

// --detach: `sluice <argv without --detach> --supervise` in its own session; waits until it
// has written daemons.json naming itself.
int RunDetached(const UpOptions& o, const std::string& path) {
  std::vector<std::string> args;
  for (const std::string& a : o.argv) {
    if (a != "--detach" && a != "-d")
      args.push_back(a);
  }
  args.push_back("--supervise");
  const std::string log = o.home + "/logs/supervisor.log";
  std::error_code ec;
  std::filesystem::create_directories(o.home + "/logs", ec);
  std::filesystem::rename(log, log + ".1", ec);
  absl::StatusOr<pid_t> pid = internal::SpawnDaemon(o.self_exe, args, log, true);
  if (!pid.ok()) {
    std::fprintf(stderr, "sluice up: %s\n", std::string(pid.status().message()).c_str());
    return 1;
  }
  const absl::Time deadline = absl::Now() + 3 * o.start_timeout + absl::Seconds(10);
  while (absl::Now() < deadline) {
    absl::StatusOr<std::optional<DaemonsFile>> f = ReadDaemonsFile(path);
    if (f.ok() && f->has_value() && (*f)->supervisor_pid == *pid) {
      PrintStarted(**f, path);
      return 0;
    }
    if (!DaemonAlive(*pid, "")) {
      std::fprintf(stderr, "sluice up: the supervisor exited; last lines of %s:\n  %s\n",
                   log.c_str(), internal::LogTail(log, 20).c_str());
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  kill(*pid, SIGTERM);
  std::fprintf(stderr, "sluice up: the supervisor did not start the daemons in time; see %s\n",
               log.c_str());
  return 1;
}

// Fresh or repaired daemons written to daemons.json with this process as their supervisor.
// Returns the names this process spawned, or nullopt after printing why it failed.
std::optional<std::set<std::string>> Bring(const UpOptions& o,
                                           const std::optional<DaemonsFile>& prior,
                                           DaemonsFile& file) {
  std::set<std::string> children;
  if (prior.has_value() && AnyAlive(*prior)) {
    file = *prior;
    absl::StatusOr<std::vector<std::string>> started = RepairDaemons(o, file);
    if (!started.ok()) {
      std::fprintf(stderr, "sluice up: %s\n", std::string(started.status().message()).c_str());
      return std::nullopt;
    }
    children.insert(started->begin(), started->end());
    std::printf("repaired: started [%s], adopted the others\n",
                absl::StrJoin(*started, ", ").c_str());
  } else {
    absl::StatusOr<DaemonsFile> fresh = StartDaemons(o);
    if (!fresh.ok()) {
      std::fprintf(stderr, "sluice up: %s\n", std::string(fresh.status().message()).c_str());
      return std::nullopt;
    }
    file = *std::move(fresh);
    for (const auto& [name, d] : file.daemons)
      children.insert(name);
  }
  file.supervisor_pid = getpid();
  return children;
}

}  // namespace

absl::StatusOr<DaemonsFile> StartDaemons(const UpOptions& o) {
  std::error_code ec;
  std::filesystem::create_directories(o.home + "/logs", ec);
  std::filesystem::create_directories(o.home + "/run", ec);
  if (ec)
    return absl::InternalError(absl::StrCat(o.home, ": cannot create: ", ec.message()));
  DaemonsFile file;
  for (const char* name : kStartOrder) {
    DaemonEntry e = Planned(o, name, file);
    absl::Status s =
        internal::StartDaemon(o.self_exe, name, /*rotate_log=*/true, o.start_timeout, e);
    file.daemons[name] = e;
    if (!s.ok()) {
      StopDaemons(file, o.stop_timeout);
      return s;
    }
  }
  return file;
}

absl::StatusOr<std::vector<std::string>> RepairDaemons(const UpOptions& o, DaemonsFile& file) {
  std::vector<std::string> started;
  for (const char* name : kStartOrder) {
    auto it = file.daemons.find(name);
    if (it == file.daemons.end() || it->second.args.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(DaemonsFilePath(o.home), " has no launch arguments for the ", name,
                       " (written by an older sluice); run `sluice down` and `sluice up`"));
    }
    if (DaemonAlive(it->second.pid, name))
      continue;
    SLUICE_RETURN_IF_ERROR(
        internal::StartDaemon(o.self_exe, name, /*rotate_log=*/true, o.start_timeout, it->second));
    started.push_back(name);
  }
  return started;
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

int RunUp(const UpOptions& o) {
  const std::string path = DaemonsFilePath(o.home);
  absl::StatusOr<std::optional<DaemonsFile>> existing = ReadDaemonsFile(path);
  std::optional<DaemonsFile> prior;
  if (!existing.ok())
    std::fprintf(stderr, "sluice up: replacing unreadable %s\n", path.c_str());
  else
    prior = *existing;
  if (prior.has_value() && prior->supervisor_pid != getpid() &&
      DaemonAlive(prior->supervisor_pid, "up")) {
    const std::vector<std::string> dead = DeadDaemons(*prior);
    std::fprintf(stderr, "sluice up: already up (supervisor pid %d%s; see %s)\n",
                 static_cast<int>(prior->supervisor_pid),
                 dead.empty() ? "" : (" is restarting " + absl::StrJoin(dead, ", ")).c_str(),
                 path.c_str());
    return 1;
  }
  if (o.detach)
    return RunDetached(o, path);
  const sigset_t set = internal::SupervisorSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  DaemonsFile file;
  std::optional<std::set<std::string>> children = Bring(o, prior, file);
  if (!children.has_value())
    return 1;
  if (absl::Status s = WriteDaemonsFile(path, file); !s.ok()) {
    std::fprintf(stderr, "sluice up: %s\n", std::string(s.message()).c_str());
    StopDaemons(file, o.stop_timeout);
    return 1;
  }
  PrintStarted(file, path);
  if (!o.supervise)
    std::printf("running in the foreground; Ctrl-C stops the daemons\n");
  std::fflush(stdout);
  internal::SuperviseDaemons(o, file, *std::move(children));
  StopDaemons(file, o.stop_timeout);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::printf("stopped\n");
  return 0;
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
    // The supervisor goes first so nothing is restarted; it stops its daemons in order and
    // removes the file itself.
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
