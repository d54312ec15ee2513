// LoopEnv: the real-clock Env of the daemons. One loop thread runs every timer, posted callback
// and file-descriptor watch, reading CLOCK_MONOTONIC (Now() is nanoseconds since boot expressed
// as an absl::Time after the Unix epoch, so it never jumps and matches the monotonic stamps in
// the intercept's shared memory). Used by the token server and the node CLI.
// Thread safety: every public method may be called from any thread (an internal mutex guards the
// timer heap and the watch table); callbacks run only on the loop thread, without the lock held.
#ifndef SLUICE_RUNTIME_COMMON_LOOP_ENV_H_
#define SLUICE_RUNTIME_COMMON_LOOP_ENV_H_

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"

namespace sluice::runtime {

// Converts between LoopEnv time and CLOCK_MONOTONIC nanoseconds.
inline int64_t ToMonotonicNanos(absl::Time t) { return absl::ToUnixNanos(t); }
inline absl::Time FromMonotonicNanos(int64_t ns) { return absl::FromUnixNanos(ns); }
// CLOCK_MONOTONIC now, as LoopEnv::Now() would report it. Thread-safe.
absl::Time MonotonicNow();

class LoopEnv : public common::Env {
 public:
  using WatchId = uint64_t;  // 0 is never valid
  // Called on the loop thread with poll(2) revents (POLLIN, POLLHUP, POLLERR ...).
  using FdCallback = absl::AnyInvocable<void(short revents)>;

  // Creates the wake-up eventfd and starts the loop thread.
  static absl::StatusOr<std::unique_ptr<LoopEnv>> Create();
  // Stops the loop (if running) and joins it; pending callbacks are dropped unrun.
  ~LoopEnv() override;
  LoopEnv(const LoopEnv&) = delete;
  LoopEnv& operator=(const LoopEnv&) = delete;

  absl::Time Now() const override { return MonotonicNow(); }
  TimerId RunAt(absl::Time when, Callback cb) override;
  bool Cancel(TimerId id) override;
  void Post(Callback cb) override { RunAt(Now(), std::move(cb)); }

  // Calls `cb` on the loop thread whenever `fd` is readable or hung up, until Unwatch. The fd
  // stays owned by the caller and must stay open while watched.
  WatchId WatchFd(int fd, FdCallback cb);
  // Stops watching. Returns false if unknown. Safe from inside the watch's own callback.
  bool Unwatch(WatchId id);

  // Runs `cb` on the loop and waits for it; once the loop is stopped, runs it on the calling
  // thread instead. Must not be called from the loop thread.
  void RunSync(Callback cb);
  // Stops and joins the loop thread. Idempotent; not callable from the loop thread.
  void Stop();
  bool InLoopThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  struct Timer {
    absl::Time when;
    uint64_t seq;
    TimerId id;
  };
  struct Watch {
    int fd;
    std::shared_ptr<FdCallback> cb;  // shared with an in-flight dispatch on the loop thread
  };
  static bool Later(const Timer& a, const Timer& b) {
    return a.when != b.when ? a.when > b.when : a.seq > b.seq;
  }

  explicit LoopEnv(int wake_fd);
  void Wake();
  void Loop();
  // Pops one due timer's callback (nullptr when none is due). Called with mu_ held.
  Callback PopDue(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration Timeout(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchFds(const std::vector<WatchId>& ids, const std::vector<short>& revents);

  const int wake_fd_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<Timer> heap_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TimerId, Callback> timers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<WatchId, Watch> watches_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_COMMON_LOOP_ENV_H_
