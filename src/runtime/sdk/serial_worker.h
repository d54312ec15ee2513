// SerialWorker: one thread that runs submitted jobs one at a time, in submission order. The
// function SDK runs batch handlers (which block on the GPU) here, off the HTTP loop thread.
// Thread-safe: Submit/Close/Join from any thread except the worker's own (Join).
#ifndef SLUICE_RUNTIME_SDK_SERIAL_WORKER_H_
#define SLUICE_RUNTIME_SDK_SERIAL_WORKER_H_

#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace sluice::runtime {

class SerialWorker {
 public:
  using Job = absl::AnyInvocable<void()>;
  SerialWorker();
  // Close()s and Join()s.
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  // Queues `job`. Returns false (and drops the job unrun) once Close() has been called.
  bool Submit(Job job);
  // Stops accepting jobs; jobs already accepted still run. Idempotent.
  void Close();
  // Close()s, waits until every accepted job has run, and joins the thread. Idempotent.
  void Join();
  // Jobs accepted and not yet finished (queued or running).
  int pending() const;

 private:
  void Loop();

  mutable absl::Mutex mu_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_SERIAL_WORKER_H_
