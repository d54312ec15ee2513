// ParamSegment: one model's parameters in host memory, a run of the store's arena chunks
// (param_arena.h: sealed memfds, pre-touched) seen as one contiguous view: filled once, then
// sealed (served, never written again). Used by ParamStore (the node's parameter store), the chain
// receiver (fills it from the network) and instance processes (map the chunk fds they received
// over the agent's Unix socket).
// Thread safety: the fill (mutable_data() writes) belongs to one owner at a time; after Seal()
// every accessor may be called from any thread.
#ifndef SLUICE_RUNTIME_PARAMSTORE_SEGMENT_H_
#define SLUICE_RUNTIME_PARAMSTORE_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/paramstore/param_arena.h"

namespace sluice::runtime {

// Where a byte of a segment lives in the files behind it (for sendfile(2)): `bytes` contiguous
// bytes of file `fd` start at `offset`.
struct FileSpan {
  int fd = -1;
  int64_t offset = 0;
  int64_t bytes = 0;
};

class ParamSegment {
 public:
  // Store side: `bytes` (> 0) carved from `arena` (shared: the store owns it too, and a segment
  // still leased when the store goes keeps it alive). The view is writable; bytes past `bytes`
  // in the last chunk are zeroed (no earlier model's bytes are ever handed out).
  // ResourceExhausted when the arena lacks free chunks.
  static absl::StatusOr<std::unique_ptr<ParamSegment>> Create(std::shared_ptr<ParamArena> arena,
                                                              int64_t bytes);
  // Instance side: maps `fds` (sealed chunks of `chunk_bytes` each, in order, together >=
  // `bytes`) read-only into one view of `bytes`. InvalidArgument when a fd is not a sealed memfd
  // of that size. Takes ownership of `fds` (closed once mapped, and on failure). `populate`:
  // MAP_POPULATE (fault every page in now rather than on first read).
  static absl::StatusOr<std::unique_ptr<ParamSegment>> MapChunksReadOnly(std::vector<int> fds,
                                                                         int64_t chunk_bytes,
                                                                         int64_t bytes,
                                                                         bool populate = false);
  ~ParamSegment();  // store side: the chunks go back to the arena, warm
  ParamSegment(const ParamSegment&) = delete;
  ParamSegment& operator=(const ParamSegment&) = delete;

  // Ends the fill: mutable_data() is nullptr from now on. Instances could never write it (the
  // chunks are sealed); the store keeps its mapping writable (segment.cc says why). Idempotent.
  [[nodiscard]] absl::Status Seal();

  bool sealed() const { return sealed_; }
  int64_t size() const { return size_; }
  int64_t chunk_bytes() const { return chunk_bytes_; }
  // Store side: the chunks' fds in order (owned by the arena; send them, do not close them).
  std::vector<int> fds() const;
  // Store side: the file behind byte `offset` (< size()).
  FileSpan FileAt(int64_t offset) const;
  // Faults in [offset, offset + bytes) for writing (MADV_POPULATE_WRITE) right before it is
  // filled, so the kernel's page zeroing is still in cache when the data lands; skipped on
  // warm (pre-touched or reused) chunks. Before Seal() only.
  void Prepare(int64_t offset, int64_t bytes);
  // FrameChecksum (checksum.h) of piece `index` of `piece_bytes`-byte pieces (the chain's
  // chunks), computed once and kept: the bytes never change after Seal(), so a source sending the
  // model again does not read it again to checksum it. Sealed segments only; any thread.
  uint64_t PieceChecksum(int64_t piece_bytes, int64_t index) const;
  // Records checksums already verified (a chain member's, on arrival) for `piece_bytes` pieces.
  void KeepPieceChecksums(int64_t piece_bytes, std::vector<uint64_t> sums);
  // Writable before Seal(), nullptr after.
  char* mutable_data() { return sealed_ ? nullptr : data_; }
  const char* data() const { return data_; }

 private:
  ParamSegment(std::shared_ptr<ParamArena> arena, std::vector<int> ids, char* data, int64_t size,
               int64_t chunk_bytes, bool sealed)
      : arena_(std::move(arena)), ids_(std::move(ids)), data_(data), size_(size),
        chunk_bytes_(chunk_bytes), sealed_(sealed) {}
  std::shared_ptr<ParamArena> arena_;  // null on the instance side
  std::vector<int> ids_;               // the arena's chunk ids, in view order
  char* data_;
  int64_t size_;
  int64_t chunk_bytes_;
  bool sealed_;
  bool composed_ = false;  // the view is a second mapping of scattered chunks (arena.Take)
  bool warm_ = false;      // every chunk written before through this very mapping
  mutable absl::Mutex sums_mu_;
  mutable int64_t sums_piece_ ABSL_GUARDED_BY(sums_mu_) = 0;  // the pieces `sums_` is for
  mutable std::vector<uint64_t> sums_ ABSL_GUARDED_BY(sums_mu_);
  mutable std::vector<bool> sums_known_ ABSL_GUARDED_BY(sums_mu_);
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_SEGMENT_H_
