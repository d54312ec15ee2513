// The loop never blocks on a daemon: a restart spawns and returns (the restarted daemon's port
// is pinned in its args, so the others and the clients find it where it was); only start-up in
// supervisor.cc waits for health. Timestamps in the log lines are UTC wall-clock.
#include "runtime/cli/supervise_loop.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "runtime/cli/daemon_launch.h"
#include "runtime/cli/restart_backoff.h"

namespace sluice::runtime::internal {
namespace {

const char* const kStartOrder[] = {"agent", "controller", "gateway"};

struct Watched {
  std::string name;
  bool child = false;  // spawned by this process: reaped with its exit status
  absl::Time started;
  absl::Time restart_at = absl::InfiniteFuture();  // finite while dead, waiting for its restart
  RestartBackoff backoff;
};

void Log(const std::string& line) {
  std::fprintf(stderr, "%s sluice up: %s\n",
               absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()).c_str(),
               line.c_str());
  std::fflush(stderr);
}

// How the daemon ended, or nullopt while it runs.
std::optional<std::string> Ended(const Watched& w, const DaemonEntry& e) {
  if (w.child) {
    int status = 0;
    const pid_t r = waitpid(e.pid, &status, WNOHANG);
    if (r == e.pid)
      return DescribeExit(status);
    if (r == 0)
      return std::nullopt;
  }
  if (DaemonAlive(e.pid, w.name))
    return std::nullopt;
  return std::string(w.child ? "exit status unknown (reaped elsewhere)"
                             : "exit status unknown (adopted from an earlier supervisor)");
}

void OnEnded(Watched& w, DaemonEntry& e, const std::string& how, absl::Time now) {
  const absl::Duration delay = w.backoff.OnExit(w.started, now);
  w.restart_at = now + delay;
  Log(absl::StrCat(w.name, " (pid ", e.pid, ") exited: ", how, "; restarting in ",
                   absl::FormatDuration(delay), " (restart ", e.restarts + 1, "; log ", e.log,
                   ")"));
  const bool looping = w.backoff.crash_looping();
  if (looping && !e.crash_loop) {
    Log(absl::StrCat("CRASH LOOP: ", w.name, " exited ", w.backoff.quick_exits(),
                     " times in a row, each within a minute of starting; still restarting it "
                     "(back-off up to 30s). Last lines of ", e.log, ":\n  ",
                     LogTail(e.log, 10)));
  }
  e.crash_loop = looping;
  e.pid = 0;
}

void Restart(const UpOptions& o, Watched& w, DaemonEntry& e, absl::Time now) {
  std::ofstream(e.log, std::ios::app)
      << "--- sluice up: restart " << e.restarts + 1 << " of " << w.name << " ---\n";
  absl::StatusOr<pid_t> pid = SpawnDaemon(o.self_exe, e.args, e.log, false);
  if (!pid.ok()) {
    const absl::Duration delay = w.backoff.OnExit(now, now);
    w.restart_at = now + delay;
    Log(absl::StrCat("cannot restart ", w.name, ": ", pid.status().message(), "; next try in ",
                     absl::FormatDuration(delay)));
    return;
  }
  e.pid = *pid;
  ++e.restarts;
  w.child = true;
  w.started = now;
  w.restart_at = absl::InfiniteFuture();
  Log(absl::StrCat("restarted ", w.name, " (pid ", e.pid, ", port ", e.port, ")"));
}

// One pass over the daemons at `now`: exits noticed, restarts due, crash loops cleared. True
// when daemons.json must be rewritten.
bool Pass(const UpOptions& o, DaemonsFile& file, std::vector<Watched>& watched, absl::Time now) {
  bool changed = false;
  for (Watched& w : watched) {
    DaemonEntry& e = file.daemons[w.name];
    if (w.restart_at == absl::InfiniteFuture()) {
      if (std::optional<std::string> how = Ended(w, e)) {
        OnEnded(w, e, *how, now);
        changed = true;
      } else if (e.crash_loop && now - w.started >= o.backoff.healthy) {
        e.crash_loop = false;
        changed = true;
        Log(absl::StrCat(w.name, " has run ", absl::FormatDuration(o.backoff.healthy),
                         " since its restart: no longer crash-looping"));
      }
    } else if (now >= w.restart_at) {
      Restart(o, w, e, now);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

int SuperviseDaemons(const UpOptions& o, DaemonsFile& file, std::set<std::string> children) {
  std::vector<Watched> watched;
  for (const char* name : kStartOrder) {
    if (file.daemons.contains(name)) {
      Watched w;
      w.name = name;
      w.child = children.contains(name);
      w.started = absl::Now();
      w.backoff = RestartBackoff(o.backoff);
      watched.push_back(std::move(w));
    }
  }
  const sigset_t set = SupervisorSignals();
  while (true) {
    const absl::Time now = absl::Now();
    if (Pass(o, file, watched, now)) {
      if (absl::Status s = WriteDaemonsFile(DaemonsFilePath(o.home), file); !s.ok())
        Log(std::string(s.message()));
    }
    absl::Time wake = now + o.poll;
    for (const Watched& w : watched)
      wake = std::min(wake, w.restart_at);
    const timespec ts = absl::ToTimespec(std::max(wake - absl::Now(), absl::Milliseconds(1)));
    siginfo_t info;
    const int sig = sigtimedwait(&set, &info, &ts);
    if (sig == SIGINT || sig == SIGTERM)
      return sig;
  }
}

}  // namespace sluice::runtime::internal
