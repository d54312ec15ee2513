// Serial, chunk-pipelined forwarding to a chain of agents (BlitzScale's serial forwarding
// multicast, §5): the origin sends chunk k to the first member, which forwards it to the next
// while receiving chunk k+1 (chain_receiver.h). A member that fails (connect or IO error, or no
// byte for io_timeout) is skipped: its upstream dials the next member, which answers with the
// first chunk it still needs, so the transfer resumes where that member's acknowledged prefix
// ends. Used by the agent's POST /agent/v1/params/{model}/forward and by multicast-bench.
// Thread safety: SendChain and ForwardToChain block the calling thread; a ChunkSource is
// shared with the thread filling it (its own locking).
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHAIN_SENDER_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHAIN_SENDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/paramstore/chain_protocol.h"
#include "runtime/paramstore/param_store.h"

namespace sluice::runtime {

struct ChainOptions {
  int64_t chunk_bytes = int64_t{4} << 20;  // [4 KiB, 1 GiB]; small enough to verify in cache
  // The cluster's shared chain token, sent in every Hello (receivers refuse a transfer whose
  // token differs from theirs; docs/parameter-store.md "Authentication"). Empty: none.
  std::string token;
  absl::Duration connect_timeout = absl::Seconds(2);
  // A member silent this long (no chunk, ack or heartbeat) counts as dead; heartbeats go out
  // every io_timeout / 3 while a sender waits for data.
  absl::Duration io_timeout = absl::Seconds(15);  // generous: a starved 2-core VM is slow
};

// What a sender sends from: a sealed store segment (the origin) or a segment still arriving
// (a forwarding member).
class ChunkSource {
 public:
  virtual ~ChunkSource() = default;
  virtual FileSpan FileAt(int64_t offset) const = 0;  // the file behind a byte, for sendfile
  // Blocks until more than `have` leading chunks are stored or `wait` passes; returns how many
  // are stored, or -1 once the source was aborted.
  virtual int64_t WaitAvailable(int64_t have, absl::Duration wait) = 0;
  virtual uint64_t ChunkChecksum(int64_t index) = 0;  // index < WaitAvailable's result
  // The socket to the current downstream member (-1 when none), so that an owner aborting the
  // source can shut it down at once.
  virtual void SetDownstream(int fd) {}
};

struct ChainReport {
  std::vector<std::string> completed;  // members that store the model now, in chain order
  std::vector<std::string> failed;     // "address: why", for members skipped as dead/rejecting
  absl::Duration elapsed;
};

// Sends `base`'s transfer (model, sizes, transfer id; `to`/`rest` are ignored) from `source` to
// `members` in order, rerouting around failures. Never fails as a whole: every member ends up in
// `completed` or `failed`.
ChainDone ForwardToChain(ChunkSource& source, const ChainHello& base,
                         std::vector<std::string> members, const ChainOptions& options);

// The origin: multicasts a stored model to `chain` (1-64 distinct host:port addresses of chain
// receivers). InvalidArgument naming "chain" or "chunk_bytes" for bad input; otherwise OK with
// the report (check `failed`).
absl::StatusOr<ChainReport> SendChain(const ParamLease& lease,
                                      const std::vector<std::string>& chain,
                                      const ChainOptions& options = {});

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHAIN_SENDER_H_
