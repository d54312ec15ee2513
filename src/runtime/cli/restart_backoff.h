// RestartBackoff: when the supervisor of `sluice up` restarts a daemon that exited, and when a
// daemon counts as crash-looping. Pure (time comes in as arguments). Used by supervise_loop.cc.
// Thread-compatible.
#ifndef SLUICE_RUNTIME_CLI_RESTART_BACKOFF_H_
#define SLUICE_RUNTIME_CLI_RESTART_BACKOFF_H_

#include <algorithm>

#include "absl/time/time.h"

namespace sluice::runtime {

struct BackoffOptions {
  absl::Duration min = absl::Milliseconds(500);  // the first restart's delay
  absl::Duration max = absl::Seconds(30);        // the delay doubles up to this
  absl::Duration healthy = absl::Seconds(60);    // a run this long resets delay and count
  int crash_loop_exits = 5;  // exits in a row, each before `healthy`, that make a crash loop
};

class RestartBackoff {
 public:
  explicit RestartBackoff(const BackoffOptions& options = {}) : options_(options) {
    next_ = options_.min;
  }

  // The daemon started at `started` exited at `now`: returns the delay before restarting it.
  // A run of at least `healthy` first resets the delay to `min` and the exit count to 0; then
  // the delay returned is the current one and the next doubles (capped at `max`).
  absl::Duration OnExit(absl::Time started, absl::Time now) {
    if (now - started >= options_.healthy) {
      next_ = options_.min;
      quick_exits_ = 0;
    }
    const absl::Duration delay = next_;
    next_ = std::min(next_ * 2, options_.max);
    ++quick_exits_;
    return delay;
  }

  // Exits since the last healthy run (including one that ended a healthy run).
  int quick_exits() const { return quick_exits_; }
  bool crash_looping() const { return quick_exits_ >= options_.crash_loop_exits; }

 private:
  BackoffOptions options_;
  absl::Duration next_;
  int quick_exits_ = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_RESTART_BACKOFF_H_
