// One connection per member at a time; a failure moves to the next member with the same
// transfer id, and that member's Welcome says where to resume.
#include "runtime/paramstore/chain_sender.h"

#include <unistd.h>

#include <random>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/paramstore/chain_socket.h"
#include "runtime/paramstore/checksum.h"

namespace sluice::runtime {
namespace {

// A sealed, fully stored segment: every chunk is available; checksums computed once per model
// (kept by the segment).
class LeaseSource : public ChunkSource {
 public:
  LeaseSource(const ParamLease& lease, int64_t chunk_bytes)
      : lease_(lease), chunk_bytes_(chunk_bytes),
        chunks_((lease.size() + chunk_bytes - 1) / chunk_bytes) {}
  FileSpan FileAt(int64_t offset) const override { return lease_.FileAt(offset); }
  int64_t WaitAvailable(int64_t, absl::Duration) override { return chunks_; }
  uint64_t ChunkChecksum(int64_t i) override { return lease_.ChunkChecksum(chunk_bytes_, i); }

 private:
  const ParamLease& lease_;
  const int64_t chunk_bytes_;
  const int64_t chunks_;
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Sends chunks [from, n) as they become available, with heartbeats while waiting.
absl::Status SendChunks(int fd, ChunkSource& src, const ChainHello& h, int64_t from,
                        const ChainOptions& o) {
  const int64_t n = h.chunks();
  int64_t have = 0;
  for (int64_t i = from; i < n; ++i) {
    while (have <= i) {
      have = src.WaitAvailable(i, o.io_timeout / 3);
      if (have < 0) return absl::AbortedError("the upstream transfer was aborted");
      if (have <= i) SLUICE_RETURN_IF_ERROR(WriteFrameHeader(fd, {-1, 0, 0}));
    }
    const int64_t len = h.chunk_length(i);
    SLUICE_RETURN_IF_ERROR(WriteFrameHeader(fd, {i, len, src.ChunkChecksum(i)}));
    SLUICE_RETURN_IF_ERROR(SendSegmentRange(
        fd, [&src](int64_t at) { return src.FileAt(at); }, i * h.chunk_bytes, len));
  }
  return absl::OkStatus();
}

// Transfers to hello.to (which forwards to hello.rest). kExists yields {completed: {to}} with
// `skipped` set: the caller still owes the rest of the chain.
absl::StatusOr<ChainDone> SendToMember(ChunkSource& src, const ChainHello& h,
                                       const ChainOptions& o, bool& skipped) {
  skipped = false;
  Fd c;
  SLUICE_ASSIGN_OR_RETURN(c.fd, ConnectTo(h.to, o.connect_timeout, o.io_timeout));
  src.SetDownstream(c.fd);
  struct Clear {
    ChunkSource& s;
    ~Clear() { s.SetDownstream(-1); }
  } clear{src};
  SLUICE_RETURN_IF_ERROR(WriteHello(c.fd, h));
  SLUICE_ASSIGN_OR_RETURN(ChainWelcome w, ReadWelcome(c.fd));
  if (w.code == WelcomeCode::kExists) {
    skipped = true;
    return ChainDone{{h.to}, {}};
  }
  if (w.code != WelcomeCode::kOk) return absl::FailedPreconditionError("rejected: " + w.message);
  if (w.resume_chunk < 0 || w.resume_chunk > h.chunks()) {
    return absl::InvalidArgumentError("welcome: resume chunk out of range");
  }
  SLUICE_RETURN_IF_ERROR(SendChunks(c.fd, src, h, w.resume_chunk, o));
  for (;;) {  // acks and heartbeats until the member reports the chain behind it
    int64_t ack = 0;
    ChainDone done;
    SLUICE_ASSIGN_OR_RETURN(ReplyType t, ReadReply(c.fd, ack, done));
    if (t == ReplyType::kDone) return done;
  }
}

}  // namespace

ChainDone ForwardToChain(ChunkSource& source, const ChainHello& base,
                         std::vector<std::string> members, const ChainOptions& options) {
  ChainDone out;
  size_t next = 0;
  while (next < members.size()) {
    ChainHello h = base;
    h.token = options.token;  // this member's own token, not its upstream's
    h.to = members[next];
    h.rest.assign(members.begin() + static_cast<std::ptrdiff_t>(next) + 1, members.end());
    ++next;
    bool skipped = false;
    absl::StatusOr<ChainDone> r = SendToMember(source, h, options, skipped);
    if (!r.ok()) {
      out.failed.push_back(absl::StrCat(h.to, ": ", r.status().message()));
      if (absl::IsAborted(r.status())) {  // nothing more to send from: the rest fail too
        for (; next < members.size(); ++next) {
          out.failed.push_back(members[next] + ": upstream aborted");
        }
      }
      continue;
    }
    out.completed.insert(out.completed.end(), r->completed.begin(), r->completed.end());
    out.failed.insert(out.failed.end(), r->failed.begin(), r->failed.end());
    if (!skipped) break;  // that member carried the rest of the chain
  }
  return out;
}

absl::StatusOr<ChainReport> SendChain(const ParamLease& lease,
                                      const std::vector<std::string>& chain,
                                      const ChainOptions& options) {
  if (chain.empty() || chain.size() > kMaxChainMembers) {
    return absl::InvalidArgumentError("field 'chain': must hold 1-64 addresses");
  }
  absl::flat_hash_set<std::string> seen;
  for (size_t i = 0; i < chain.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(ValidateAddress(chain[i], absl::StrCat("chain[", i, "]")));
    if (!seen.insert(chain[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("field 'chain[", i, "]': '", chain[i], "' appears twice"));
    }
  }
  if (options.chunk_bytes < kMinChunkBytes || options.chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError("field 'chunk_bytes': must be in [4096, 2^30]");
  }
  ChainHello base;
  std::random_device rd;
  base.transfer_id = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                     static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  base.model = lease.model();
  base.total_bytes = lease.size();
  base.chunk_bytes = options.chunk_bytes;
  LeaseSource source(lease, options.chunk_bytes);
  const absl::Time start = absl::Now();
  ChainDone d = ForwardToChain(source, base, chain, options);
  return ChainReport{std::move(d.completed), std::move(d.failed), absl::Now() - start};
}

}  // namespace sluice::runtime
