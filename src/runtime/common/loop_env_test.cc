// Tests of LoopEnv: ordering, cancellation, cross-thread posting, fd watches and Stop. These
// use the real clock, so they assert order and eventual delivery, never durations.
#include "runtime/common/loop_env.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

std::unique_ptr<LoopEnv> MakeLoop() {
  auto env = LoopEnv::Create();
  EXPECT_TRUE(env.ok()) << env.status();
  return std::move(*env);
}

TEST(LoopEnvTest, TimersRunInTimeThenInsertionOrder) {
  auto env = MakeLoop();
  std::vector<int> order;
  absl::Notification done;
  env->RunSync([&] {
    const absl::Time t = env->Now() + absl::Milliseconds(5);
    env->RunAt(t + absl::Milliseconds(1), [&] {
      order.push_back(3);
      done.Notify();
    });
    env->RunAt(t, [&] { order.push_back(1); });
    env->RunAt(t, [&] { order.push_back(2); });
  });
  done.WaitForNotification();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(LoopEnvTest, CancelledTimerNeverRuns) {
  auto env = MakeLoop();
  std::atomic<int> ran{0};
  const auto id = env->RunAfter(absl::Milliseconds(20), [&] { ran = 1; });
  EXPECT_TRUE(env->Cancel(id));
  EXPECT_FALSE(env->Cancel(id));
  absl::Notification later;
  env->RunAfter(absl::Milliseconds(40), [&] { later.Notify(); });
  later.WaitForNotification();
  EXPECT_EQ(ran.load(), 0);
}

TEST(LoopEnvTest, NowIsMonotonicAndTimersWaitForTheirTime) {
  auto env = MakeLoop();
  const absl::Time start = env->Now();
  absl::Time fired;
  absl::Notification done;
  env->RunAt(start + absl::Milliseconds(10), [&] {
    fired = env->Now();
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_GE(fired, start + absl::Milliseconds(10));
}

TEST(LoopEnvTest, WatchesFdAndUnwatchesFromCallback) {
  auto env = MakeLoop();
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::atomic<int> calls{0};
  absl::Notification got;
  LoopEnv::WatchId id = 0;
  env->RunSync([&] {
    id = env->WatchFd(sv[0], [&](short) {
      char c;
      ASSERT_EQ(read(sv[0], &c, 1), 1);
      EXPECT_EQ(c, 'x');
      ++calls;
      EXPECT_TRUE(env->Unwatch(id));
      got.Notify();
    });
  });
  ASSERT_EQ(write(sv[1], "xx", 2), 2);
  got.WaitForNotification();
  absl::Notification flushed;
  env->RunAfter(absl::Milliseconds(10), [&] { flushed.Notify(); });
  flushed.WaitForNotification();
  EXPECT_EQ(calls.load(), 1);  // the second byte is not delivered after Unwatch
  close(sv[0]);
  close(sv[1]);
}

TEST(LoopEnvTest, StopDropsPendingCallbacks) {
  auto env = MakeLoop();
  std::atomic<int> ran{0};
  env->RunAfter(absl::Hours(1), [&] { ran = 1; });
  env->Stop();
  env->Stop();  // idempotent
  EXPECT_EQ(ran.load(), 0);
}

TEST(LoopEnvTest, RunSyncAfterStopRunsInline) {
  auto env = MakeLoop();
  env->Stop();
  bool ran = false;
  env->RunSync([&] { ran = true; });
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace sluice::runtime
