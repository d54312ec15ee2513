// ChainReceiver: an agent's receive port for parameter multicast chains. Each incoming transfer
// fills a ParamWriter of the node's ParamStore chunk by chunk (checksum verified per chunk, total
// size fixed by the Hello) while a forwarder thread sends the stored prefix on to the rest of the
// chain (chain_sender.h); the model becomes servable only when every chunk is stored and
// verified. If the upstream connection breaks, the partial transfer waits orphan_timeout for a
// rerouted upstream (same transfer id) and resumes; otherwise it is dropped, never served.
// Thread safety: Start/Stop from one owner thread; one accept thread, one thread per connection
// (reaped as they end) and one forwarder per transfer, all joined by Stop(). The store must
// outlive the receiver.
//
// Transfer states: kReceiving -> kComplete (all chunks verified, committed) -> gone (after the
// chain behind it reported); kReceiving -> kOrphaned (upstream lost) -> kReceiving (an upstream
// re-attached) | gone (orphan_timeout, or a protocol/checksum error: dropped).
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHAIN_RECEIVER_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHAIN_RECEIVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/paramstore/chain_sender.h"
#include "runtime/paramstore/param_store.h"
#include "runtime/paramstore/thread_set.h"

namespace sluice::runtime {

struct ChainReceiverOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: ephemeral
  // For forwarding (chunk size comes from each transfer). chain.token is also the token every
  // incoming Hello must carry (compared in constant time); empty accepts any sender.
  ChainOptions chain;
  absl::Duration orphan_timeout = absl::Seconds(10);
};

class ChainReceiver {
 public:
  // Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<ChainReceiver>> Start(ParamStore& store,
                                                              ChainReceiverOptions options);
  ~ChainReceiver();  // Stop()s
  ChainReceiver(const ChainReceiver&) = delete;
  ChainReceiver& operator=(const ChainReceiver&) = delete;

  int port() const { return port_; }
  std::string address() const;  // host:port
  // Abrupt, as if the process died: shuts every socket down at once (peers see a reset or EOF),
  // drops partial transfers, joins the threads. Idempotent.
  void Stop();
  int64_t transfers_completed() const { return completed_.load(); }
  int64_t transfers_dropped() const { return dropped_.load(); }
  int64_t hellos_refused() const { return refused_.load(); }  // bad token or bad hello
  // Connection threads held (running, or finished and not yet reaped): for tests.
  size_t threads_held() const { return threads_.held(); }

  class Transfer;  // chain_receiver.cc

 private:
  ChainReceiver(ParamStore& store, ChainReceiverOptions options, int listen_fd, int port)
      : store_(store), options_(std::move(options)), listen_fd_(listen_fd), port_(port) {}
  void AcceptLoop();
  void Serve(int fd);
  // The transfer `h` names, new or re-attached; sets `welcome` on refusal (nullptr returned).
  std::shared_ptr<Transfer> Attach(const ChainHello& h, int fd, uint64_t& generation,
                                   ChainWelcome& welcome);
  // A new transfer for `h` (Attach found none), holding attach_mu_ but not mu_.
  std::shared_ptr<Transfer> NewTransfer(const ChainHello& h, int fd, uint64_t& generation,
                                        ChainWelcome& welcome)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(attach_mu_);
  void Forget(uint64_t transfer_id);
  void Untrack(int fd);

  ParamStore& store_;
  const ChainReceiverOptions options_;
  const int listen_fd_;
  const int port_;
  std::thread accept_thread_;
  ThreadSet threads_;
  std::atomic<int64_t> completed_{0}, dropped_{0}, refused_{0};
  // Serializes Attach (so one transfer id is never created twice) without holding mu_ while the
  // store carves a segment: that may wait for chunks a finishing transfer still holds, and the
  // finishing transfer needs mu_ (Forget) to let go of them.
  absl::Mutex attach_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_set<int> fds_ ABSL_GUARDED_BY(mu_);  // open connections (shut down by Stop)
  absl::flat_hash_map<uint64_t, std::shared_ptr<Transfer>> transfers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHAIN_RECEIVER_H_
