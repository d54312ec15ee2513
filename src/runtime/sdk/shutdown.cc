// The self-pipe is never drained: once a byte is in it, poll() reports it readable to every
// waiter for the rest of the process, which is exactly "shutdown requested for good".
#include "runtime/sdk/shutdown.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

namespace sluice::runtime {
namespace {

std::atomic<bool> g_requested{false};
std::atomic<int> g_write_fd{-1};
int g_read_fd = -1;

void Notify() {
  g_requested.store(true);
  const int fd = g_write_fd.load();
  if (fd >= 0) {
    const char byte = 'x';
    [[maybe_unused]] ssize_t n = write(fd, &byte, 1);
  }
}

extern "C" void SluiceSdkOnSignal(int) {
  const int saved = errno;
  Notify();
  errno = saved;
}

}  // namespace

// An instance the node agent started (SLUICE_INSTANCE_ID set) drains and exits when the agent
// dies, instead of running on unsupervised: the kernel sends SIGTERM when the parent goes
// (PR_SET_PDEATHSIG), and an agent already gone before this call left us re-parented.
static void FollowAgent() {
  const char* id = std::getenv("SLUICE_INSTANCE_ID");
  if (id == nullptr || *id == '\0') return;
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (parent == 1) RequestShutdown();
}

absl::Status InstallShutdownHandlers() {
  static std::once_flag once;
  static absl::Status result;
  std::call_once(once, [] {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      result = absl::InternalError("shutdown: pipe2 failed");
      return;
    }
    g_read_fd = fds[0];
    g_write_fd.store(fds[1]);
    if (g_requested.load()) {
      Notify();  // RequestShutdown() came first
    }
    struct sigaction sa = {};
    sa.sa_handler = SluiceSdkOnSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    FollowAgent();
  });
  return result;
}

void RequestShutdown() {
  Notify();
}

bool ShutdownRequested() {
  return g_requested.load();
}

void WaitForShutdown() {
  while (!g_requested.load()) {
    pollfd p = {g_read_fd, POLLIN, 0};
    poll(&p, 1, -1);
  }
}

}  // namespace sluice::runtime
