// `sluice up --detach` / `status --json` / `down` with a temporary home and ephemeral ports, on
// the emulated device: the real binary and the real daemons. Every path stops what it started
// (UpGuard), and the home directory is removed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
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

TEST(UpDownTest, DetachStatusDown) {
  UpGuard guard;
  const std::string& home = guard.home();
  const RunResult up =
      RunSluice({"up", "--detach", "--home", home, "--gateway-port", "0", "--controller-port", "0",
                 "--agent-port", "0", "--device", "emulated", "--emulated-gpus", "1"});
  if (up.rc != 0 && up.output.find("sluice agent: NOT_FOUND") != std::string::npos) {
    // A build without the CUDA headers has no emulated driver or sluice-spin for the agent.
    GTEST_SKIP() << "the agent's programs are not built here:\n" << up.output;
  }
  ASSERT_EQ(up.rc, 0) << up.output;

  absl::StatusOr<std::optional<DaemonsFile>> file = ReadDaemonsFile(DaemonsFilePath(home));
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->has_value());
  EXPECT_EQ((*file)->supervisor_pid, 0);  // detached
  for (const char* name : {"agent", "controller", "gateway"}) {
    ASSERT_EQ((*file)->daemons.count(name), 1u) << name;
    const DaemonEntry& d = (*file)->daemons.at(name);
    EXPECT_TRUE(DaemonAlive(d.pid, name)) << name;
    EXPECT_GT(d.port, 0) << name;
    EXPECT_TRUE(std::filesystem::exists(d.log)) << d.log;
  }

  const RunResult again = RunSluice({"up", "--detach", "--home", home});
  EXPECT_EQ(again.rc, 1);
  EXPECT_THAT(again.output, HasSubstr("already up (see " + DaemonsFilePath(home) + ")"));

  const RunResult status = RunSluice({"status", "--json", "--home", home});
  ASSERT_EQ(status.rc, 0) << status.output;
  const nlohmann::json j = nlohmann::json::parse(status.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << status.output;
  EXPECT_TRUE(j["functions"].is_array()) << status.output;
  EXPECT_TRUE(j["functions"].empty()) << status.output;

  const RunResult down = RunSluice({"down", "--home", home});
  EXPECT_EQ(down.rc, 0) << down.output;
  EXPECT_FALSE(std::filesystem::exists(DaemonsFilePath(home)));
  for (const auto& [name, d] : (*file)->daemons)
    EXPECT_FALSE(DaemonAlive(d.pid, name)) << name;

  const RunResult down_again = RunSluice({"down", "--home", home});
  EXPECT_EQ(down_again.rc, 1);
  EXPECT_THAT(down_again.output, HasSubstr("not running"));
}

}  // namespace
}  // namespace sluice::runtime
