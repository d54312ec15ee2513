// Tests of Subprocess with /bin/sh children: environment changes, line reading, exit codes,
// signals and the end-of-output case.
#include "runtime/common/subprocess.h"

#include <signal.h>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

std::unique_ptr<Subprocess> Sh(const std::string& script,
                               std::vector<std::pair<std::string, std::string>> env = {}) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.env = std::move(env);
  auto p = Subprocess::Spawn(o);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

TEST(SubprocessTest, ReadsLinesAndExitCode) {
  auto p = Sh("echo one; printf 'two\\nthr'; printf 'ee\\n'; exit 3");
  EXPECT_EQ(*p->ReadLine(absl::Seconds(10)), "one");
  EXPECT_EQ(*p->ReadLine(absl::Seconds(10)), "two");
  EXPECT_EQ(*p->ReadLine(absl::Seconds(10)), "three");
  EXPECT_TRUE(absl::IsNotFound(p->ReadLine(absl::Seconds(10)).status()));
  EXPECT_EQ(*p->Wait(), 3);
}

TEST(SubprocessTest, SetsAndUnsetsEnvironment) {
  setenv("SLUICE_SUBPROCESS_TEST_GONE", "x", 1);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo \"$SLUICE_A-${SLUICE_SUBPROCESS_TEST_GONE:-unset}\""};
  o.env = {{"SLUICE_A", "hello"}};
  o.unset_env = {"SLUICE_SUBPROCESS_TEST_GONE"};
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*(*p)->ReadLine(absl::Seconds(10)), "hello-unset");
}

TEST(SubprocessTest, DiscardsStderrOnRequest) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "echo gone >&2; echo $?"};
  o.discard_stderr = true;
  auto p = Subprocess::Spawn(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*(*p)->ReadLine(absl::Seconds(10)), "0");  // the write to /dev/null succeeded
}

TEST(SubprocessTest, KillReportsSignal) {
  auto p = Sh("echo up; exec sleep 30");
  EXPECT_EQ(*p->ReadLine(absl::Seconds(10)), "up");
  p->Kill(SIGKILL);
  EXPECT_EQ(*p->Wait(), 128 + SIGKILL);
}

TEST(SubprocessTest, TimesOutWithoutOutput) {
  auto p = Sh("exec sleep 30");
  EXPECT_TRUE(absl::IsDeadlineExceeded(p->ReadLine(absl::Milliseconds(20)).status()));
}  // the destructor kills and reaps the child

TEST(SubprocessTest, MissingProgramFails) {
  SpawnOptions o;
  o.argv = {"/nonexistent/sluice-nothing"};
  EXPECT_FALSE(Subprocess::Spawn(o).ok());
}

}  // namespace
}  // namespace sluice::runtime
