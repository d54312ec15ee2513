// Fixed-width little-endian integers (both ends are this code on the same kind of host) and
// length-prefixed strings; every length is bounded before anything is allocated.
#include "runtime/paramstore/chain_protocol.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/paramstore/chain_socket.h"
#include "runtime/paramstore/param_store.h"

namespace sluice::runtime {
namespace {

constexpr uint16_t kMaxString = 1024;

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    std::memcpy(buf_.data() + at, &v, sizeof(T));
  }
  void PutString(const std::string& s) {
    const auto n = static_cast<uint16_t>(std::min<size_t>(s.size(), kMaxString));
    Put(n);
    buf_.append(s.data(), n);
  }
  absl::Status Send(int fd, bool more = false) { return SendAll(fd, buf_.data(), buf_.size(), more); }

 private:
  std::string buf_;
};

template <typename T>
absl::StatusOr<T> Get(int fd) {
  T v{};
  SLUICE_RETURN_IF_ERROR(RecvAll(fd, &v, sizeof(T)));
  return v;
}

absl::StatusOr<std::string> GetString(int fd) {
  SLUICE_ASSIGN_OR_RETURN(uint16_t n, Get<uint16_t>(fd));
  if (n > kMaxString) return absl::InvalidArgumentError("chain message: string too long");
  std::string s(n, '\0');
  SLUICE_RETURN_IF_ERROR(RecvAll(fd, s.data(), n));
  return s;
}

absl::StatusOr<std::vector<std::string>> GetStrings(int fd) {
  SLUICE_ASSIGN_OR_RETURN(uint16_t n, Get<uint16_t>(fd));
  if (n > kMaxChainMembers) return absl::InvalidArgumentError("chain message: too many members");
  std::vector<std::string> out;
  for (uint16_t i = 0; i < n; ++i) {
    SLUICE_ASSIGN_OR_RETURN(std::string s, GetString(fd));
    out.push_back(std::move(s));
  }
  return out;
}

void PutStrings(Writer& w, const std::vector<std::string>& v) {
  w.Put(static_cast<uint16_t>(std::min(v.size(), kMaxChainMembers)));
  for (size_t i = 0; i < v.size() && i < kMaxChainMembers; ++i) w.PutString(v[i]);
}

}  // namespace

int64_t ChainHello::chunk_length(int64_t i) const {
  return std::min(chunk_bytes, total_bytes - i * chunk_bytes);
}

absl::Status WriteHello(int fd, const ChainHello& h) {
  Writer w;
  w.Put(kChainMagic);
  w.Put(kChainVersion);
  w.Put(h.transfer_id);
  w.Put(h.total_bytes);
  w.Put(h.chunk_bytes);
  w.PutString(h.token);
  w.PutString(h.model);
  w.PutString(h.to);
  PutStrings(w, h.rest);
  return w.Send(fd);
}

absl::StatusOr<ChainHello> ReadHello(int fd) {
  SLUICE_ASSIGN_OR_RETURN(uint32_t magic, Get<uint32_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(uint16_t version, Get<uint16_t>(fd));
  if (magic != kChainMagic) return absl::InvalidArgumentError("chain hello: bad magic");
  if (version != kChainVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("chain hello: version ", version, ", this agent speaks ", kChainVersion));
  }
  ChainHello h;
  SLUICE_ASSIGN_OR_RETURN(h.transfer_id, Get<uint64_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(h.total_bytes, Get<int64_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(h.chunk_bytes, Get<int64_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(h.token, GetString(fd));
  SLUICE_ASSIGN_OR_RETURN(h.model, GetString(fd));
  SLUICE_ASSIGN_OR_RETURN(h.to, GetString(fd));
  SLUICE_ASSIGN_OR_RETURN(h.rest, GetStrings(fd));
  SLUICE_RETURN_IF_ERROR(ParamStore::ValidateModelName(h.model));
  if (h.total_bytes <= 0) return absl::InvalidArgumentError("chain hello: total_bytes <= 0");
  if (h.chunk_bytes < kMinChunkBytes || h.chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError("chain hello: chunk_bytes out of range");
  }
  return h;
}

absl::Status WriteWelcome(int fd, const ChainWelcome& wl) {
  Writer w;
  w.Put(static_cast<uint32_t>(wl.code));
  w.Put(wl.resume_chunk);
  w.PutString(wl.message);
  return w.Send(fd);
}

absl::StatusOr<ChainWelcome> ReadWelcome(int fd) {
  ChainWelcome w;
  SLUICE_ASSIGN_OR_RETURN(uint32_t code, Get<uint32_t>(fd));
  if (code > static_cast<uint32_t>(WelcomeCode::kExists)) {
    return absl::InvalidArgumentError("chain welcome: unknown code");
  }
  w.code = static_cast<WelcomeCode>(code);
  SLUICE_ASSIGN_OR_RETURN(w.resume_chunk, Get<int64_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(w.message, GetString(fd));
  return w;
}

absl::Status WriteFrameHeader(int fd, const ChainFrame& f) {
  Writer w;
  w.Put(f.index);
  w.Put(f.length);
  w.Put(f.checksum);
  return w.Send(fd, /*more=*/f.length > 0);
}

absl::StatusOr<ChainFrame> ReadFrameHeader(int fd) {
  ChainFrame f;
  SLUICE_ASSIGN_OR_RETURN(f.index, Get<int64_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(f.length, Get<int64_t>(fd));
  SLUICE_ASSIGN_OR_RETURN(f.checksum, Get<uint64_t>(fd));
  return f;
}

absl::Status WriteAck(int fd, int64_t stored_chunks) {
  Writer w;
  w.Put(static_cast<uint8_t>(ReplyType::kAck));
  w.Put(stored_chunks);
  return w.Send(fd);
}

absl::Status WriteHeartbeat(int fd) {
  Writer w;
  w.Put(static_cast<uint8_t>(ReplyType::kHeartbeat));
  return w.Send(fd);
}

absl::Status WriteDone(int fd, const ChainDone& d) {
  Writer w;
  w.Put(static_cast<uint8_t>(ReplyType::kDone));
  PutStrings(w, d.completed);
  PutStrings(w, d.failed);
  return w.Send(fd);
}

absl::StatusOr<ReplyType> ReadReply(int fd, int64_t& ack, ChainDone& done) {
  SLUICE_ASSIGN_OR_RETURN(uint8_t type, Get<uint8_t>(fd));
  switch (static_cast<ReplyType>(type)) {
    case ReplyType::kAck: {
      SLUICE_ASSIGN_OR_RETURN(ack, Get<int64_t>(fd));
      return ReplyType::kAck;
    }
    case ReplyType::kHeartbeat:
      return ReplyType::kHeartbeat;
    case ReplyType::kDone: {
      SLUICE_ASSIGN_OR_RETURN(done.completed, GetStrings(fd));
      SLUICE_ASSIGN_OR_RETURN(done.failed, GetStrings(fd));
      return ReplyType::kDone;
    }
  }
  return absl::InvalidArgumentError("chain reply: unknown type");
}

}  // namespace sluice::runtime
