// LoopEnv's loop: ppoll(2) over the wake-up eventfd and the watched fds with a timeout to the
// earliest timer, then fd callbacks, then due timers one at a time (the lock is dropped while a
// callback runs, so callbacks may schedule, cancel and unwatch).
#include "runtime/common/loop_env.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status.h"

namespace sluice::runtime {

absl::Time MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return absl::FromUnixNanos(static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec);
}

absl::StatusOr<std::unique_ptr<LoopEnv>> LoopEnv::Create() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  std::unique_ptr<LoopEnv> env(new LoopEnv(fd));
  env->thread_ = std::thread([raw = env.get()] { raw->Loop(); });
  return env;
}

LoopEnv::LoopEnv(int wake_fd) : wake_fd_(wake_fd) {}

LoopEnv::~LoopEnv() {
  Stop();
  close(wake_fd_);
}

void LoopEnv::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  Wake();
  if (thread_.joinable()) {
    SLUICE_CHECK_MSG(!InLoopThread(), "LoopEnv::Stop from its own loop thread");
    thread_.join();
  }
}

void LoopEnv::Wake() {
  const uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the loop will wake anyway.
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof(one));
}

LoopEnv::TimerId LoopEnv::RunAt(absl::Time when, Callback cb) {
  TimerId id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    heap_.push_back(Timer{when, id, id});
    std::push_heap(heap_.begin(), heap_.end(), Later);
    timers_.emplace(id, std::move(cb));
  }
  if (!InLoopThread()) Wake();
  return id;
}

bool LoopEnv::Cancel(TimerId id) {
  absl::MutexLock lock(&mu_);
  return timers_.erase(id) > 0;  // the heap entry is skipped when it surfaces
}

LoopEnv::WatchId LoopEnv::WatchFd(int fd, FdCallback cb) {
  WatchId id;
  {
    absl::MutexLock lock(&mu_);
    id = next_id_++;
    watches_.emplace(id, Watch{fd, std::make_shared<FdCallback>(std::move(cb))});
  }
  if (!InLoopThread()) Wake();
  return id;
}

bool LoopEnv::Unwatch(WatchId id) {
  bool erased;
  {
    absl::MutexLock lock(&mu_);
    erased = watches_.erase(id) > 0;
  }
  if (erased && !InLoopThread()) Wake();
  return erased;
}

void LoopEnv::RunSync(Callback cb) {
  SLUICE_CHECK_MSG(!InLoopThread(), "LoopEnv::RunSync from its own loop thread");
  absl::Notification done;
  const TimerId id = RunAt(Now(), [&cb, &done] {
    cb();
    done.Notify();
  });
  // A stopped loop never runs it: run it here instead (no loop thread is left to race with
  // once Stop() has returned), so shutdown orders cannot deadlock.
  while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(20))) {
    bool stopped;
    {
      absl::MutexLock lock(&mu_);
      stopped = stop_;
    }
    if (stopped && Cancel(id)) {
      cb();
      return;
    }
  }
}

LoopEnv::Callback LoopEnv::PopDue(absl::Time now) {
  while (!heap_.empty() && heap_.front().when <= now) {
    const TimerId id = heap_.front().id;
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;  // cancelled
    Callback cb = std::move(it->second);
    timers_.erase(it);
    return cb;
  }
  return nullptr;
}

absl::Duration LoopEnv::Timeout(absl::Time now) {
  while (!heap_.empty() && !timers_.contains(heap_.front().id)) {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    heap_.pop_back();
  }
  if (heap_.empty()) return absl::InfiniteDuration();
  return std::max(absl::ZeroDuration(), heap_.front().when - now);
}

void LoopEnv::DispatchFds(const std::vector<WatchId>& ids, const std::vector<short>& revents) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (revents[i] == 0) continue;
    std::shared_ptr<FdCallback> cb;
    {
      absl::MutexLock lock(&mu_);
      auto it = watches_.find(ids[i]);
      if (it == watches_.end()) continue;  // unwatched by an earlier callback
      cb = it->second.cb;
    }
    (*cb)(revents[i]);
  }
}

void LoopEnv::Loop() {
  std::vector<pollfd> fds;
  std::vector<WatchId> ids;
  while (true) {
    absl::Duration timeout;
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    ids.clear();
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      timeout = Timeout(Now());
      for (const auto& [id, w] : watches_) {
        fds.push_back(pollfd{w.fd, POLLIN, 0});
        ids.push_back(id);
      }
    }
    timespec ts = absl::ToTimespec(std::min(timeout, absl::Hours(1)));
    const int n = ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0 && errno != EINTR) SLUICE_CHECK_MSG(false, std::strerror(errno));
    if (n > 0 && fds[0].revents != 0) {
      uint64_t drained;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &drained, sizeof(drained));
    }
    std::vector<short> revents(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) revents[i] = n > 0 ? fds[i + 1].revents : 0;
    DispatchFds(ids, revents);
    // Timers due at `now` run in order; ones they schedule later wait for the next pass.
    const absl::Time now = Now();
    while (true) {
      Callback cb;
      {
        absl::MutexLock lock(&mu_);
        if (stop_) return;
        cb = PopDue(now);
      }
      if (!cb) break;
      cb();
    }
  }
}

}  // namespace sluice::runtime
