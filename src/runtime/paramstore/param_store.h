// ParamStore: the node's one host-memory parameter store (docs/parameter-store.md), shared by
// BlitzScale's parameter pool (sources for multicast chains), QUART's KeysManager (stage
// parameters kept for fast instance starts) and fast cold starts. Models are named segments
// (segment.h) carved from a pre-touched arena of sealed memfd chunks (param_arena.h) that
// instances map read-only; capacity in bytes with LRU eviction past a
// threshold (QUART: 85 %), pins for segments in use, and a fill protocol (ParamWriter) so nothing
// half-written is ever served. Owned by the node agent; the chain receiver fills it.
// Thread safety: every member may be called from any thread (one absl::Mutex); writers and
// leases are used by one thread each and must not outlive the store.
#ifndef SLUICE_RUNTIME_PARAMSTORE_PARAM_STORE_H_
#define SLUICE_RUNTIME_PARAMSTORE_PARAM_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/paramstore/segment.h"

namespace sluice::runtime {

struct ParamStoreOptions {
  int64_t capacity_bytes = 0;   // required, > 0
  // Usage is kept at or below evict_threshold x capacity_bytes by evicting the least recently
  // used unpinned models; in (0, 1].
  double evict_threshold = 0.85;
  std::function<absl::Time()> now = [] { return absl::Now(); };  // injectable for tests
  // The arena (param_arena.h) behind the capacity: chunk size (0: automatic), when its pages
  // are touched, huge pages.
  int64_t chunk_bytes = 0;
  Pretouch pretouch = Pretouch::kAtStart;
  bool huge_pages = false;
};

// One model as List() reports it.
struct ParamModelInfo {
  std::string model;
  int64_t bytes = 0;
  int pins = 0;            // leases (instances, senders) holding it
  bool ready = false;      // false while filling: not servable
  absl::Time loaded_at;    // when it became ready (InfinitePast while filling)
  absl::Time last_use;     // last Acquire (or loaded_at)
  std::vector<int64_t> layer_bytes;  // empty: one blob
};

class ParamStore;

// A pin on a ready model: while any lease lives, the model is not evicted. The segment is
// read-only; fds() (its sealed chunks) can be sent to another process (SCM_RIGHTS), FileAt()
// feeds sendfile.
class ParamLease {
 public:
  ~ParamLease();
  ParamLease(const ParamLease&) = delete;
  ParamLease& operator=(const ParamLease&) = delete;
  const std::string& model() const { return model_; }
  std::vector<int> fds() const { return segment_->fds(); }
  int64_t chunk_bytes() const { return segment_->chunk_bytes(); }
  FileSpan FileAt(int64_t offset) const { return segment_->FileAt(offset); }
  const char* data() const { return segment_->data(); }
  int64_t size() const { return segment_->size(); }
  const std::vector<int64_t>& layer_bytes() const { return layer_bytes_; }
  // See ParamSegment::PieceChecksum: computed once per model, kept.
  uint64_t ChunkChecksum(int64_t chunk_bytes, int64_t index) const {
    return segment_->PieceChecksum(chunk_bytes, index);
  }

 private:
  friend class ParamStore;
  // shared_ptr: the store's entry is the other owner; a lease keeps the mapping valid even if
  // the entry goes (it cannot while pinned, but Stop/destruction order stays safe).
  ParamLease(ParamStore* store, std::string model, std::shared_ptr<ParamSegment> segment,
             std::vector<int64_t> layer_bytes)
      : store_(store), model_(std::move(model)), segment_(std::move(segment)),
        layer_bytes_(std::move(layer_bytes)) {}
  ParamStore* store_;
  std::string model_;
  std::shared_ptr<ParamSegment> segment_;
  std::vector<int64_t> layer_bytes_;
};

// A model being filled (from disk or the network). Its bytes count against capacity from
// BeginPut. Commit() publishes it; destroying an uncommitted writer (or Abort()) removes it and
// frees its reservation, so a failed or partial fill is never visible.
class ParamWriter {
 public:
  ~ParamWriter();
  ParamWriter(const ParamWriter&) = delete;
  ParamWriter& operator=(const ParamWriter&) = delete;
  const std::string& model() const { return model_; }
  char* data() { return segment_->mutable_data(); }
  // See ParamSegment::Prepare: call before filling each piece.
  void Prepare(int64_t offset, int64_t bytes) { segment_->Prepare(offset, bytes); }
  FileSpan FileAt(int64_t offset) const { return segment_->FileAt(offset); }
  int64_t size() const { return segment_->size(); }
  // Checksums verified during the fill (ParamSegment::KeepPieceChecksums), kept for sending on.
  void KeepChunkChecksums(int64_t chunk_bytes, std::vector<uint64_t> sums) {
    segment_->KeepPieceChecksums(chunk_bytes, std::move(sums));
  }
  // Seals the segment and makes the model servable (Acquire). Call once.
  [[nodiscard]] absl::Status Commit();
  void Abort();

 private:
  friend class ParamStore;
  ParamWriter(ParamStore* store, std::string model, std::shared_ptr<ParamSegment> segment)
      : store_(store), model_(std::move(model)), segment_(std::move(segment)) {}
  ParamStore* store_;
  std::string model_;
  std::shared_ptr<ParamSegment> segment_;  // shared with the store's entry
  bool done_ = false;
};

class ParamStore {
 public:
  // InvalidArgument naming capacity_bytes or evict_threshold.
  static absl::StatusOr<std::unique_ptr<ParamStore>> Create(ParamStoreOptions options);
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;

  // Reserves `bytes` for `model` and returns its writer. layer_bytes, when given, must be > 0
  // each and sum to `bytes`. Evicts least recently used unpinned ready models until the new one
  // fits under the threshold. Errors (nothing is evicted on any of them): InvalidArgument for a
  // bad model name ([A-Za-z0-9._:-], 1-128 chars), bytes <= 0 or bad layers; AlreadyExists when
  // `model` is stored or filling; ResourceExhausted when it cannot fit even after evicting every
  // unpinned model (the message names the limit and what is pinned).
  absl::StatusOr<std::unique_ptr<ParamWriter>> BeginPut(const std::string& model, int64_t bytes,
                                                        std::vector<int64_t> layer_bytes = {});
  // Pins a ready model and marks it used now. NotFound for an unknown model; Unavailable while
  // it is still filling.
  absl::StatusOr<std::unique_ptr<ParamLease>> Acquire(const std::string& model);
  // Removes a ready model. NotFound; FailedPrecondition while pinned or filling.
  [[nodiscard]] absl::Status Evict(const std::string& model);

  std::vector<ParamModelInfo> List() const;  // by model name
  bool Has(const std::string& model) const;  // ready
  // Ready + filling, each rounded up to whole arena chunks (what they hold of the arena).
  int64_t used_bytes() const;
  int64_t capacity_bytes() const { return options_.capacity_bytes; }
  int64_t limit_bytes() const;               // evict_threshold x capacity
  const ParamArena& arena() const { return *arena_; }

  // InvalidArgument unless `model` is a valid model name (see BeginPut).
  static absl::Status ValidateModelName(const std::string& model);

 private:
  friend class ParamLease;
  friend class ParamWriter;
  struct Entry {
    std::shared_ptr<ParamSegment> segment;  // null while the reservation allocates
    int64_t bytes = 0;
    int64_t reserved = 0;  // bytes rounded up to whole chunks
    std::vector<int64_t> layer_bytes;
    bool ready = false;
    int pins = 0;
    uint64_t use_seq = 0;  // LRU order (larger = more recent); ties impossible
    absl::Time loaded_at = absl::InfinitePast();
    absl::Time last_use = absl::InfinitePast();
  };
  ParamStore(ParamStoreOptions options, std::shared_ptr<ParamArena> arena)
      : options_(std::move(options)), arena_(std::move(arena)) {}
  void Unpin(const std::string& model);
  absl::Status Publish(const std::string& model);
  void Drop(const std::string& model);
  // Frees room for `bytes` more, or ResourceExhausted without evicting anything.
  absl::Status MakeRoomLocked(const std::string& model, int64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ParamStoreOptions options_;
  // Shared: segments still leased when the store goes (they must not be) keep it alive.
  const std::shared_ptr<ParamArena> arena_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_PARAM_STORE_H_
