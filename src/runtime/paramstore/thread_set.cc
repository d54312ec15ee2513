// A finished thread records its id; whoever starts the next thread joins it (the join returns
// at once: the thread is past its last statement).
#include "runtime/paramstore/thread_set.h"

#include <utility>

namespace sluice::runtime {

void ThreadSet::Start(std::function<void()> fn) {
  Reap();
  absl::MutexLock l(&mu_);
  const uint64_t id = next_++;
  // The lock is held while the thread is created, so its final lock waits until it is stored.
  threads_[id] = std::thread([this, id, fn = std::move(fn)] {
    fn();
    absl::MutexLock done(&mu_);
    finished_.push_back(id);
  });
}

void ThreadSet::Reap() {
  std::vector<std::thread> done;
  {
    absl::MutexLock l(&mu_);
    for (uint64_t id : finished_) {
      auto it = threads_.find(id);
      if (it == threads_.end()) continue;
      done.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }
  for (std::thread& t : done) t.join();
}

void ThreadSet::JoinAll() {
  for (;;) {
    std::vector<std::thread> all;
    {
      absl::MutexLock l(&mu_);
      if (threads_.empty()) return;
      for (auto& [id, t] : threads_) all.push_back(std::move(t));
      threads_.clear();
      finished_.clear();
    }
    for (std::thread& t : all) t.join();
  }
}

size_t ThreadSet::held() const {
  absl::MutexLock l(&mu_);
  return threads_.size();
}

}  // namespace sluice::runtime
