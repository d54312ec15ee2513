// ThreadSet: threads that end on their own (one per connection or request), reaped as they
// finish so that a long-lived server holds a handle only for threads still running (plus those
// that finished since the last Start), not one per connection ever served. Used by the chain
// receiver, the fd server and the agent's params API.
// Thread safety: every member may be called from any thread except from a thread of the set
// (JoinAll would wait for itself).
#ifndef SLUICE_RUNTIME_PARAMSTORE_THREAD_SET_H_
#define SLUICE_RUNTIME_PARAMSTORE_THREAD_SET_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sluice::runtime {

class ThreadSet {
 public:
  ThreadSet() = default;
  ~ThreadSet() { JoinAll(); }
  ThreadSet(const ThreadSet&) = delete;
  ThreadSet& operator=(const ThreadSet&) = delete;

  // Joins the threads that finished, then runs `fn` on a new thread.
  void Start(std::function<void()> fn);
  // Joins the threads that finished.
  void Reap();
  // Waits for every thread (running ones must be told to end first).
  void JoinAll();
  // Handles held: running threads and finished ones not yet reaped.
  size_t held() const;

 private:
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_THREAD_SET_H_
