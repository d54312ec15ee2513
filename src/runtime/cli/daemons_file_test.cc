#include "runtime/cli/daemons_file.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-cli-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

DaemonEntry Entry(pid_t pid, int port, const std::string& log) {
  DaemonEntry e;
  e.pid = pid;
  e.port = port;
  e.log = log;
  return e;
}

DaemonsFile Sample() {
  DaemonsFile f;
  f.supervisor_pid = 42;
  f.daemons["agent"] = Entry(101, 7072, "/h/logs/agent.log");
  f.daemons["controller"] = Entry(102, 40001, "/h/logs/controller.log");
  DaemonEntry& c = f.daemons["controller"];
  c.args = {"controller", "--port", "40001", "--agents", "127.0.0.1:7072"};
  c.health = "/healthz";
  c.restarts = 3;
  c.crash_loop = true;
  return f;
}

TEST(DaemonsFileTest, WriteReadRoundTrip) {
  TempDir dir;
  const std::string path = DaemonsFilePath(dir.path());
  EXPECT_EQ(path, dir.path() + "/run/daemons.json");
  absl::StatusOr<std::optional<DaemonsFile>> none = ReadDaemonsFile(path);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(WriteDaemonsFile(path, Sample()).ok());
  absl::StatusOr<std::optional<DaemonsFile>> back = ReadDaemonsFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, Sample());
}

TEST(DaemonsFileTest, GarbageNamesThePath) {
  absl::StatusOr<DaemonsFile> f = ParseDaemonsFile("{\"daemons\": {\"agent\": {}}}", "/x.json");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("/x.json"));
  EXPECT_FALSE(ParseDaemonsFile("not json", "/x.json").ok());
}

TEST(DaemonsFileTest, ClientAddressPrecedence) {
  const std::optional<DaemonsFile> file = Sample();
  EXPECT_EQ(ClientAddress("10.0.0.1:9", file, "controller", 7071), "10.0.0.1:9");
  EXPECT_EQ(ClientAddress("", file, "controller", 7071), "127.0.0.1:40001");
  EXPECT_EQ(ClientAddress("", file, "gateway", 7070), "127.0.0.1:7070");
  EXPECT_EQ(ClientAddress("", std::nullopt, "gateway", 7070), "127.0.0.1:7070");
}

TEST(DaemonsFileTest, ResolveHomePrefersTheFlagThenTheEnvironment) {
  EXPECT_EQ(ResolveHome("/flag"), "/flag");
  const char* old = std::getenv("SLUICE_HOME");
  const std::string saved = old ? old : "";
  setenv("SLUICE_HOME", "/from-env", 1);
  EXPECT_EQ(ResolveHome(""), "/from-env");
  unsetenv("SLUICE_HOME");
  EXPECT_THAT(ResolveHome(""), ::testing::EndsWith(".sluice"));
  if (old)
    setenv("SLUICE_HOME", saved.c_str(), 1);
}

TEST(DaemonsFileTest, LivenessChecksThePidAndItsDaemonName) {
  EXPECT_TRUE(DaemonAlive(getpid(), ""));
  EXPECT_FALSE(DaemonAlive(getpid(), "controller"));  // argv[1] of this test is not "controller"
  EXPECT_FALSE(DaemonAlive(0, ""));
  const pid_t child = fork();
  if (child == 0)
    _exit(0);
  ASSERT_GT(child, 0);
  // An exited child is not alive, zombie or reaped.
  for (int i = 0; i < 1000 && DaemonAlive(child, ""); ++i)
    usleep(1000);
  EXPECT_FALSE(DaemonAlive(child, ""));
  DaemonsFile stale = Sample();
  stale.supervisor_pid = child;
  stale.daemons = {{"agent", Entry(child, 1, "x")}};
  EXPECT_FALSE(AnyAlive(stale));
}

}  // namespace
}  // namespace sluice::runtime
