// IoGate: a thread-safe door onto one io_context that may be destroyed while Responders, client
// callbacks or worker threads still hold the gate. runtime/http internal (no Boost here).
// Thread safety: every method may be called from any thread.
#ifndef SLUICE_RUNTIME_HTTP_IO_GATE_H_
#define SLUICE_RUNTIME_HTTP_IO_GATE_H_

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace sluice::runtime::http::internal {

class IoGate {
 public:
  using Fn = absl::AnyInvocable<void()>;
  // `io` is a boost::asio::io_context* that stays valid until Close().
  explicit IoGate(void* io) : io_(io) {}

  // Queues `fn` on the io_context. Returns false (and destroys `fn` outside any lock) once
  // the gate is closed.
  bool Post(Fn fn);
  // Runs `fn` now when called on a thread running the io_context, else posts it.
  bool Dispatch(Fn fn);
  // True on a thread inside the io_context's run().
  bool InLoop() const;
  // Runs `fn` on the loop and waits for it; runs it on the calling thread instead when the loop
  // has stopped (MarkStopped) or the gate is closed, so shutdown orders cannot deadlock. Must
  // not be called from the loop thread unless InLoop() (then it runs inline).
  void RunSync(Fn fn);

  // The loop thread has been joined: nobody else runs handlers any more.
  void MarkStopped() { stopped_.store(true, std::memory_order_release); }
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  // Called before the io_context is destroyed; later Posts are dropped.
  void Close();
  void* io() const { return io_; }  // valid while the caller knows the gate is open

 private:
  void* const io_;
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> stopped_{false};
};

}  // namespace sluice::runtime::http::internal

#endif  // SLUICE_RUNTIME_HTTP_IO_GATE_H_
