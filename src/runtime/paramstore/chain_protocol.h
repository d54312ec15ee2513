// The wire protocol of parameter multicast chains (docs/parameter-store.md "Chain protocol").
// Upstream -> downstream: Hello, then frames {index, length, checksum} + payload (index -1 with
// length 0 is a heartbeat). Downstream -> upstream: Welcome {code, resume_chunk, message}, then
// messages {type: ack | heartbeat | done}: an ack carries how many leading chunks are stored and
// verified; done carries which chain members completed and which failed (with why).
// Used by chain_sender.cc and chain_receiver.cc. Thread safety: stateless functions.
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHAIN_PROTOCOL_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHAIN_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::runtime {

inline constexpr uint32_t kChainMagic = 0x534c5043;  // "SLPC"
inline constexpr uint16_t kChainVersion = 3;  // 2: Hello carries a token; 3: FrameChecksum
inline constexpr int64_t kMinChunkBytes = 4096;
inline constexpr int64_t kMaxChunkBytes = int64_t{1} << 30;
inline constexpr size_t kMaxChainMembers = 64;

struct ChainHello {
  uint64_t transfer_id = 0;  // chosen by the origin; a rerouted upstream reuses it
  std::string model;
  int64_t total_bytes = 0;
  int64_t chunk_bytes = 0;
  std::string token;              // the sender's shared chain token (may be empty)
  std::string to;                 // the address the upstream dialled (the member's own name)
  std::vector<std::string> rest;  // members after `to`, in order
  int64_t chunks() const { return (total_bytes + chunk_bytes - 1) / chunk_bytes; }
  int64_t chunk_length(int64_t i) const;
};

// Welcome codes. kExists: the member already stores the model (counted complete, skipped).
enum class WelcomeCode : uint32_t { kOk = 0, kRejected = 1, kExists = 2 };

struct ChainWelcome {
  WelcomeCode code = WelcomeCode::kOk;
  int64_t resume_chunk = 0;  // the first chunk the member still needs
  std::string message;
};

struct ChainFrame {
  int64_t index = 0;  // -1: heartbeat
  int64_t length = 0;
  uint64_t checksum = 0;
};

enum class ReplyType : uint8_t { kAck = 1, kHeartbeat = 2, kDone = 3 };

struct ChainDone {
  std::vector<std::string> completed;
  std::vector<std::string> failed;  // "address: why"
};

// Blocking IO on a connected socket; errors from chain_socket.h, InvalidArgument for a malformed
// message (bad magic/version, sizes out of range, too many members, bad model name).
absl::Status WriteHello(int fd, const ChainHello& h);
absl::StatusOr<ChainHello> ReadHello(int fd);
absl::Status WriteWelcome(int fd, const ChainWelcome& w);
absl::StatusOr<ChainWelcome> ReadWelcome(int fd);
absl::Status WriteFrameHeader(int fd, const ChainFrame& f);  // payload follows (MSG_MORE)
absl::StatusOr<ChainFrame> ReadFrameHeader(int fd);
absl::Status WriteAck(int fd, int64_t stored_chunks);
absl::Status WriteHeartbeat(int fd);
absl::Status WriteDone(int fd, const ChainDone& d);
// One reply; `ack` is set for kAck, `done` for kDone.
absl::StatusOr<ReplyType> ReadReply(int fd, int64_t& ack, ChainDone& done);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHAIN_PROTOCOL_H_
