// `sluice up --detach` / `status --json` / `down` with a temporary home and ephemeral ports, on
// the emulated device: the real binary and the real daemons. Every path stops what it started
// (UpGuard), and the home directory is removed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/cli/daemons_file.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

struct RunResult {
  int rc = -1;
  std::string output;  // stdout and stderr together
};

RunResult RunSluice(const std::vector<std::string>& args) {
  std::vector<std::string> quoted;
  for (const std::string& a : args)
    quoted.push_back(absl::StrCat("'", a, "'"));
  const std::string cmd = absl::StrCat(SLUICE_BINARY, " ", absl::StrJoin(quoted, " "), " 2>&1");
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
    r.output.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Owns a temporary home; on destruction runs `sluice down` and SIGKILLs whatever is still
// listed as alive, then removes the directory.
class UpGuard {
 public:
  UpGuard() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-up-XXXXXX").string();
    home_ = mkdtemp(tmpl.data());
  }
  ~UpGuard() {
    RunSluice({"down", "--home", home_});
    absl::StatusOr<std::optional<DaemonsFile>> f = ReadDaemonsFile(DaemonsFilePath(home_));
    if (f.ok() && f->has_value()) {
      if (DaemonAlive((*f)->supervisor_pid, "up"))
        kill((*f)->supervisor_pid, SIGKILL);
      for (const auto& [name, d] : (*f)->daemons) {
        if (DaemonAlive(d.pid, name))
          kill(d.pid, SIGKILL);
      }
    }
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }
  const std::string& home() const { return home_; }

 private:
  std::string home_;
};

const std::vector<std::string> kUpArgs = {"--gateway-port", "0",        "--controller-port", "0",
                                          "--agent-port",   "0",        "--device",
                                          "emulated",       "--emulated-gpus", "1"};

// `sluice up --detach` in `home`; skips the test when the agent's programs are not built.
#define SLUICE_UP_DETACHED(home)                                                          \
  do {                                                                                    \
    std::vector<std::string> args = {"up", "--detach", "--home", home};                   \
    args.insert(args.end(), kUpArgs.begin(), kUpArgs.end());                             \
    const RunResult up = RunSluice(args);                                                 \
    if (up.rc != 0 && up.output.find("sluice agent: NOT_FOUND") != std::string::npos)     \
      GTEST_SKIP() << "the agent's programs are not built here:\n" << up.output;          \
    ASSERT_EQ(up.rc, 0) << up.output;                                                     \
  } while (0)

DaemonsFile Read(const std::string& home) {
  absl::StatusOr<std::optional<DaemonsFile>> f = ReadDaemonsFile(DaemonsFilePath(home));
  return f.ok() && f->has_value() ? **f : DaemonsFile();
}

// Polls daemons.json (up to 30 s) until `name` runs under a pid other than `old_pid`.
pid_t WaitRestarted(const std::string& home, const std::string& name, pid_t old_pid) {
  for (int i = 0; i < 600; ++i) {
    const DaemonsFile f = Read(home);
    auto it = f.daemons.find(name);
    if (it != f.daemons.end() && it->second.pid != old_pid && DaemonAlive(it->second.pid, name))
      return it->second.pid;
    usleep(50 * 1000);
  }
  return 0;
}

// `sluice status --json` answers (within 20 s: a restarted controller takes a moment).
bool StatusAnswers(const std::string& home) {
  RunResult status;
  for (int i = 0; i < 100; ++i) {
    status = RunSluice({"status", "--json", "--home", home});
    if (status.rc == 0 && nlohmann::json::parse(status.output, nullptr, false).is_object())
      return true;
    usleep(200 * 1000);
  }
  ADD_FAILURE() << status.output;
  return false;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(UpDownTest, DetachStatusDown) {
  UpGuard guard;
  const std::string& home = guard.home();
  SLUICE_UP_DETACHED(home);

  absl::StatusOr<std::optional<DaemonsFile>> file = ReadDaemonsFile(DaemonsFilePath(home));
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->has_value());
  EXPECT_TRUE(DaemonAlive((*file)->supervisor_pid, "up"));  // the background supervisor
  for (const char* name : {"agent", "controller", "gateway"}) {
    ASSERT_EQ((*file)->daemons.count(name), 1u) << name;
    const DaemonEntry& d = (*file)->daemons.at(name);
    EXPECT_TRUE(DaemonAlive(d.pid, name)) << name;
    EXPECT_GT(d.port, 0) << name;
    EXPECT_TRUE(std::filesystem::exists(d.log)) << d.log;
  }

  const RunResult again = RunSluice({"up", "--detach", "--home", home});
  EXPECT_EQ(again.rc, 1);
  EXPECT_THAT(again.output, HasSubstr(absl::StrCat("already up (supervisor pid ",
                                                  (*file)->supervisor_pid, "; see ",
                                                  DaemonsFilePath(home), ")")));

  const RunResult status = RunSluice({"status", "--json", "--home", home});
  ASSERT_EQ(status.rc, 0) << status.output;
  const nlohmann::json j = nlohmann::json::parse(status.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << status.output;
  EXPECT_TRUE(j["functions"].is_array()) << status.output;
  EXPECT_TRUE(j["functions"].empty()) << status.output;

  const RunResult down = RunSluice({"down", "--home", home});
  EXPECT_EQ(down.rc, 0) << down.output;
  EXPECT_FALSE(std::filesystem::exists(DaemonsFilePath(home)));
  EXPECT_FALSE(DaemonAlive((*file)->supervisor_pid, "up"));
  for (const auto& [name, d] : (*file)->daemons)
    EXPECT_FALSE(DaemonAlive(d.pid, name)) << name;

  const RunResult down_again = RunSluice({"down", "--home", home});
  EXPECT_EQ(down_again.rc, 1);
  EXPECT_THAT(down_again.output, HasSubstr("not running"));
}

// kill -9 each daemon in turn: the supervisor restarts it on its port, logs the exit, and
// `sluice status` answers again; `sluice down` then stops everything with no restart.
TEST(UpDownTest, KilledDaemonsAreRestarted) {
  UpGuard guard;
  const std::string& home = guard.home();
  SLUICE_UP_DETACHED(home);
  const DaemonsFile before = Read(home);
  for (const char* name : {"controller", "gateway", "agent"}) {
    SCOPED_TRACE(name);
    const DaemonEntry old = Read(home).daemons.at(name);
    ASSERT_EQ(kill(old.pid, SIGKILL), 0);
    const pid_t now = WaitRestarted(home, name, old.pid);
    ASSERT_NE(now, 0) << ReadText(home + "/logs/supervisor.log");
    const DaemonEntry fresh = Read(home).daemons.at(name);
    EXPECT_EQ(fresh.port, old.port);
    EXPECT_EQ(fresh.restarts, old.restarts + 1);
    EXPECT_TRUE(StatusAnswers(home));
  }
  const std::string log = ReadText(home + "/logs/supervisor.log");
  EXPECT_THAT(log, HasSubstr(absl::StrCat("controller (pid ", before.daemons.at("controller").pid,
                                          ") exited: signal 9")));
  EXPECT_THAT(log, HasSubstr("restarting in 500ms"));
  EXPECT_EQ(Read(home).supervisor_pid, before.supervisor_pid);
  const RunResult down = RunSluice({"down", "--home", home});
  EXPECT_EQ(down.rc, 0) << down.output;
  for (const auto& [name, d] : Read(home).daemons)
    EXPECT_FALSE(DaemonAlive(d.pid, name)) << name;
}

// kill -9 the supervisor and the controller: `sluice up` starts only the controller (same
// port), adopts the agent and the gateway, and supervises again.
TEST(UpDownTest, UpRepairsAHalfDeadInstallation) {
  UpGuard guard;
  const std::string& home = guard.home();
  SLUICE_UP_DETACHED(home);
  const DaemonsFile before = Read(home);
  ASSERT_EQ(kill(before.supervisor_pid, SIGKILL), 0);
  ASSERT_EQ(kill(before.daemons.at("controller").pid, SIGKILL), 0);
  for (int i = 0; i < 100 && (DaemonAlive(before.supervisor_pid, "up") ||
                              DaemonAlive(before.daemons.at("controller").pid, "controller"));
       ++i) {
    usleep(20 * 1000);
  }
  const RunResult up = RunSluice({"up", "--detach", "--home", home});
  ASSERT_EQ(up.rc, 0) << up.output << ReadText(home + "/logs/supervisor.log");
  const DaemonsFile after = Read(home);
  EXPECT_NE(after.supervisor_pid, before.supervisor_pid);
  EXPECT_TRUE(DaemonAlive(after.supervisor_pid, "up"));
  EXPECT_EQ(after.daemons.at("agent").pid, before.daemons.at("agent").pid);
  EXPECT_EQ(after.daemons.at("gateway").pid, before.daemons.at("gateway").pid);
  EXPECT_NE(after.daemons.at("controller").pid, before.daemons.at("controller").pid);
  EXPECT_EQ(after.daemons.at("controller").port, before.daemons.at("controller").port);
  EXPECT_THAT(ReadText(home + "/logs/supervisor.log"), HasSubstr("repaired: started [controller]"));
  EXPECT_TRUE(StatusAnswers(home));
  // The new supervisor watches the adopted gateway too.
  ASSERT_EQ(kill(after.daemons.at("gateway").pid, SIGKILL), 0);
  EXPECT_NE(WaitRestarted(home, "gateway", after.daemons.at("gateway").pid), 0);
  const RunResult again = RunSluice({"up", "--detach", "--home", home});
  EXPECT_EQ(again.rc, 1);
  EXPECT_THAT(again.output, HasSubstr("already up"));
}

}  // namespace
}  // namespace sluice::runtime
