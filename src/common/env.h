// Env: the only door to time and timers. Core policies never see it (time comes to them as an
// argument); the simulator drives them through SimEnv, the daemons through a real-clock loop,
// tests through ManualEnv. Implementations are single-threaded unless they say otherwise.
#ifndef SLUICE_COMMON_ENV_H_
#define SLUICE_COMMON_ENV_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"

namespace sluice::common {

class Env {
 public:
  using Callback = absl::AnyInvocable<void()>;
  // Identifies a scheduled callback; 0 is never a valid id.
  using TimerId = uint64_t;

  virtual ~Env() = default;

  // Current time (virtual or real).
  virtual absl::Time Now() const = 0;
  // Runs `cb` once at `when` (immediately-due if `when` <= Now()). Callbacks due at the same
  // time run in the order they were scheduled.
  virtual TimerId RunAt(absl::Time when, Callback cb) = 0;
  // Cancels a pending callback. Returns false if it already ran, was cancelled, or is unknown.
  virtual bool Cancel(TimerId id) = 0;
  // Runs `cb` as soon as possible on the Env's loop, after callbacks already due.
  virtual void Post(Callback cb) = 0;

  TimerId RunAfter(absl::Duration delay, Callback cb) {
    return RunAt(Now() + delay, std::move(cb));
  }
};

}  // namespace sluice::common

#endif  // SLUICE_COMMON_ENV_H_
