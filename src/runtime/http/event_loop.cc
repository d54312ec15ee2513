// EventLoop: an io_context run by one thread, plus the Env timer queue. Timers live in our own
// heap (ordered by time, then by scheduling order, as Env promises) behind one steady_timer armed
// at the earliest deadline; Cancel is exact because a callback is claimed under the lock before
// it runs. IoGate lives here too, being the one place that posts into an io_context.
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/notification.h"
#include "boost/asio/executor_work_guard.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "common/status.h"
#include "runtime/common/loop_env.h"
#include "runtime/http/http.h"
#include "runtime/http/io_gate.h"

namespace sluice::runtime::http {
namespace asio = boost::asio;

namespace internal {

bool IoGate::Post(Fn fn) {
  {
    absl::ReaderMutexLock lock(&mu_);
    if (!closed_) {
      asio::post(*static_cast<asio::io_context*>(io_), std::move(fn));
      return true;
    }
  }
  return false;  // `fn` is destroyed here, outside the lock (its destructor may Post again)
}

bool IoGate::Dispatch(Fn fn) {
  if (InLoop()) {
    fn();
    return true;
  }
  return Post(std::move(fn));
}

bool IoGate::InLoop() const {
  return static_cast<asio::io_context*>(io_)->get_executor().running_in_this_thread();
}

void IoGate::Close() {
  absl::WriterMutexLock lock(&mu_);
  closed_ = true;
}

void IoGate::RunSync(Fn fn) {
  if (InLoop()) {
    fn();
    return;
  }
  struct State {
    Fn fn;
    std::atomic<bool> claimed{false};
    absl::Notification done;
    void TryRun() {
      if (!claimed.exchange(true)) fn();
      done.Notify();
    }
  };
  auto state = std::make_shared<State>();
  state->fn = std::move(fn);
  if (!Post([state] { state->TryRun(); })) {
    state->TryRun();
    return;
  }
  while (!state->done.WaitForNotificationWithTimeout(absl::Milliseconds(10))) {
    // A stopped loop never runs the posted handler; no loop thread is left to race with.
    if (stopped() && !state->claimed.exchange(true)) {
      state->fn();
      return;
    }
  }
}

}  // namespace internal

namespace {
std::chrono::steady_clock::time_point ToSteady(absl::Time t) {
  // runtime::MonotonicNow is CLOCK_MONOTONIC, which is steady_clock on Linux.
  const absl::Time cap = absl::FromUnixSeconds(int64_t{1} << 40);
  return std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(absl::ToUnixNanos(std::min(t, cap))));
}
}  // namespace

struct EventLoop::Impl {
  struct Timer {
    absl::Time when;
    TimerId id;  // ids grow, so they also break ties in scheduling order
  };
  static bool Later(const Timer& a, const Timer& b) {
    return a.when != b.when ? a.when > b.when : a.id > b.id;
  }

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  asio::steady_timer alarm{io};
  std::shared_ptr<internal::IoGate> gate = std::make_shared<internal::IoGate>(&io);
  std::thread thread;

  absl::Mutex mu;
  TimerId next_id ABSL_GUARDED_BY(mu) = 1;
  std::vector<Timer> heap ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<TimerId, Callback> callbacks ABSL_GUARDED_BY(mu);
  absl::Time armed_at = absl::InfiniteFuture();  // loop thread only

  // Drops cancelled entries off the top; returns the earliest live deadline.
  absl::Time Earliest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (!heap.empty() && !callbacks.contains(heap.front().id)) {
      std::pop_heap(heap.begin(), heap.end(), Later);
      heap.pop_back();
    }
    return heap.empty() ? absl::InfiniteFuture() : heap.front().when;
  }

  Callback PopDue(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (!heap.empty() && heap.front().when <= now) {
      const TimerId id = heap.front().id;
      std::pop_heap(heap.begin(), heap.end(), Later);
      heap.pop_back();
      auto it = callbacks.find(id);
      if (it == callbacks.end()) continue;  // cancelled
      Callback cb = std::move(it->second);
      callbacks.erase(it);
      return cb;
    }
    return nullptr;
  }

  // Loop thread: runs every timer due now, one at a time without the lock, then re-arms.
  void RunDue() {
    const absl::Time now = MonotonicNow();
    while (true) {
      Callback cb;
      {
        absl::MutexLock lock(&mu);
        cb = PopDue(now);
      }
      if (!cb) break;
      cb();
    }
    Arm();
  }

  // Loop thread: points the alarm at the earliest deadline if it is not already there.
  void Arm() {
    absl::Time earliest;
    {
      absl::MutexLock lock(&mu);
      earliest = Earliest();
    }
    if (earliest == armed_at) return;
    armed_at = earliest;
    if (earliest == absl::InfiniteFuture()) {
      alarm.cancel();
      return;
    }
    alarm.expires_at(ToSteady(earliest));
    alarm.async_wait([this](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      armed_at = absl::InfiniteFuture();
      RunDue();
    });
  }
};

EventLoop::EventLoop() : impl_(std::make_unique<Impl>()) {}

absl::StatusOr<std::unique_ptr<EventLoop>> EventLoop::Create() {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  Impl* impl = loop->impl_.get();
  impl->thread = std::thread([impl] {
    boost::system::error_code ec;
    impl->io.run(ec);
  });
  return loop;
}

EventLoop::~EventLoop() {
  Stop();
  impl_->gate->Close();
  // impl_'s io_context now destroys the handlers still queued; their destructors may post,
  // which the closed gate drops.
}

void EventLoop::Stop() {
  if (!impl_->thread.joinable()) return;
  SLUICE_CHECK_MSG(!InLoopThread(), "EventLoop::Stop from its own loop thread");
  impl_->io.stop();
  impl_->thread.join();
  impl_->gate->MarkStopped();
}

bool EventLoop::InLoopThread() const { return impl_->gate->InLoop(); }

void* EventLoop::native_io_context() { return &impl_->io; }

std::shared_ptr<internal::IoGate> EventLoop::gate() const { return impl_->gate; }

absl::Time EventLoop::Now() const { return MonotonicNow(); }

EventLoop::TimerId EventLoop::RunAt(absl::Time when, Callback cb) {
  TimerId id;
  bool earliest;
  {
    absl::MutexLock lock(&impl_->mu);
    id = impl_->next_id++;
    impl_->heap.push_back(Impl::Timer{when, id});
    std::push_heap(impl_->heap.begin(), impl_->heap.end(), Impl::Later);
    impl_->callbacks.emplace(id, std::move(cb));
    earliest = impl_->heap.front().id == id;
  }
  if (earliest) {
    Impl* impl = impl_.get();
    impl_->gate->Dispatch([impl] { impl->Arm(); });
  }
  return id;
}

bool EventLoop::Cancel(TimerId id) {
  absl::MutexLock lock(&impl_->mu);
  // The heap entry is skipped when it surfaces; the alarm may fire early once, harmlessly.
  return impl_->callbacks.erase(id) > 0;
}

void EventLoop::Post(Callback cb) {
  Impl* impl = impl_.get();
  // Timers already due run first, as Env::Post promises.
  impl_->gate->Post([impl, cb = std::move(cb)]() mutable {
    bool due;
    {
      absl::MutexLock lock(&impl->mu);
      due = impl->Earliest() <= MonotonicNow();
    }
    if (due) impl->RunDue();
    cb();
  });
}

}  // namespace sluice::runtime::http
