// Fork/exec helpers for the interception tests.
#include "intercept/testing/child.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"

namespace sluice::intercept::testing {
namespace {

constexpr char kProbeEnv[] = "SLUICE_INTERCEPT_PROBE";
constexpr char kProbeMarker[] = "[sluice probe ok]";

void ExpectCleanExit(int status, const std::string& what) {
  if (WIFSIGNALED(status)) {
    ADD_FAILURE() << what << " died with signal " << WTERMSIG(status)
                  << (WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << what << " exited with " << WEXITSTATUS(status);
  }
}

}  // namespace

void RunInChild(const std::function<void()>& body, int timeout_s) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) {
    alarm(static_cast<unsigned>(timeout_s));
    body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ExpectCleanExit(status, "child scenario");
}

void RunProbe(const std::string& name, const std::vector<std::pair<std::string, std::string>>& env,
              int timeout_s) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  std::fflush(stdout);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    for (const auto& [k, v] : env)
      setenv(k.c_str(), v.c_str(), 1);
    setenv(kProbeEnv, name.c_str(), 1);
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
    alarm(static_cast<unsigned>(timeout_s));
    const std::string filter = "--gtest_filter=InterceptProbe.DISABLED_" + name;
    execl("/proc/self/exe", "intercept_probe", filter.c_str(), "--gtest_also_run_disabled_tests",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof(buf))) > 0;)
    output.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ExpectCleanExit(status, "probe " + name);
  EXPECT_NE(output.find(kProbeMarker), std::string::npos)
      << "probe " << name << " did not finish; its output:\n"
      << output;
  if (::testing::Test::HasFailure())
    std::fprintf(stderr, "probe output:\n%s\n", output.c_str());
}

bool IsProbe(const std::string& name) {
  const char* v = std::getenv(kProbeEnv);
  return v != nullptr && name == v;
}

void ProbeOk() {
  if (!::testing::Test::HasFailure())
    std::printf("%s\n", kProbeMarker);
  std::fflush(stdout);
}

void* OpenIntercept() {
  void* h = dlopen(SLUICE_INTERCEPT_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    std::fprintf(stderr, "dlopen intercept: %s\n", dlerror());
  return h;
}

void* OpenFakeDriver() {
  void* h = dlopen(SLUICE_FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    std::fprintf(stderr, "dlopen fake driver: %s\n", dlerror());
  return h;
}

void SetBaseEnv() {
  setenv("SLUICE_REAL_LIBCUDA", SLUICE_FAKE_DRIVER_PATH, 1);
  setenv("SLUICE_FAIL_TIMEOUT_MS", "600000", 1);
  unsetenv("SLUICE_TOKEN_SOCKET");
  unsetenv("SLUICE_MEM_LIMIT_BYTES");
  unsetenv("SLUICE_FAIL_POLICY");
  unsetenv("SLUICE_GPU_UUID");
}

}  // namespace sluice::intercept::testing
