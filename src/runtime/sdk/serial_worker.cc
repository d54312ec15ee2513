#include "runtime/sdk/serial_worker.h"

#include <utility>

namespace sluice::runtime {

SerialWorker::SerialWorker() : thread_([this] { Loop(); }) {}

SerialWorker::~SerialWorker() {
  Join();
}

bool SerialWorker::Submit(Job job) {
  absl::MutexLock lock(&mu_);
  if (closed_) {
    return false;
  }
  queue_.push_back(std::move(job));
  return true;
}

void SerialWorker::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

void SerialWorker::Join() {
  Close();
  if (thread_.joinable()) {
    thread_.join();
  }
}

int SerialWorker::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size()) + running_;
}

void SerialWorker::Loop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](SerialWorker* w)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) { return w->closed_ || !w->queue_.empty(); },
          this));
      if (queue_.empty()) {
        return;  // closed and drained
      }
      job = std::move(queue_.front());
      queue_.pop_front();
      running_ = 1;
    }
    job();
    absl::MutexLock lock(&mu_);
    running_ = 0;
  }
}

}  // namespace sluice::runtime
