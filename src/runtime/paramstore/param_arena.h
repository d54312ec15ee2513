// ParamArena: the parameter store's pre-touched host memory (ServerlessLLM's pinned-pool idea,
// docs/parameter-store.md "The arena"). The store's capacity is cut into equal chunks, each its
// own memfd, mapped once at a fixed place in one reserved range and written once through that
// mapping when the arena starts (or by a background thread), then sealed against writes by
// anyone else (F_SEAL_FUTURE_WRITE, F_SEAL_SHRINK/GROW, F_SEAL_SEAL) while the arena keeps its
// writable mapping. A model's segment (segment.h) is a run of adjacent free chunks, used in
// place: the mapping never changes, so fills write into pages whose page tables (and, on a
// shadow-paging VM such as this CI box, the hypervisor's) are already filled. When no run is
// free, the chunks are also mapped into a new range (mremap MREMAP_DONTUNMAP). Instances receive
// the chunks' fds. Used by ParamStore (one arena per store).
// Thread safety: every member may be called from any thread (one absl::Mutex); the background
// filler is joined by the destructor.
//
// Chunk states: kUnmade -> kMaking (filler or Take creating it) -> kFree (made; touched unless
// pretouch is kNone) -> kTaken (part of a segment) -> kFree (segment gone: the chunk keeps its
// pages and its mapping, warm for reuse).
#ifndef SLUICE_RUNTIME_PARAMSTORE_PARAM_ARENA_H_
#define SLUICE_RUNTIME_PARAMSTORE_PARAM_ARENA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace sluice::runtime {

// When the arena's pages are first written.
enum class Pretouch {
  kAtStart,     // Create() makes and touches every chunk before it returns
  kBackground,  // a thread makes and touches them; Take() makes (untouched) ones it lacks
  kNone,        // chunks are made on first Take() and faulted by their first fill; kept after
};

// "start" | "background" | "none"; InvalidArgument naming `field` otherwise.
absl::StatusOr<Pretouch> ParsePretouch(const std::string& text, const std::string& field);

struct ParamArenaOptions {
  int64_t capacity_bytes = 0;  // > 0; rounded up to whole chunks
  // 0: automatic (capacity / 128 rounded down to a power of two, clamped to [64 KiB, 64 MiB];
  // >= 2 MiB with huge pages). Otherwise a multiple of the page size (4 KiB, or 2 MiB with huge
  // pages).
  int64_t chunk_bytes = 0;
  Pretouch pretouch = Pretouch::kAtStart;
  // MFD_HUGETLB chunks (needs vm.nr_hugepages reserved by the administrator): 512x fewer page
  // faults for fills and for every instance mapping a segment. When the kernel cannot supply
  // them, the arena uses 4 KiB pages and huge_pages_note() says why.
  bool huge_pages = false;
};

class ParamArena {
 public:
  // InvalidArgument naming capacity_bytes or chunk_bytes; ResourceExhausted when the kernel
  // refuses memory while touching at start.
  static absl::StatusOr<std::shared_ptr<ParamArena>> Create(ParamArenaOptions options);
  ~ParamArena();  // joins the background filler; unmaps and closes every chunk
  ParamArena(const ParamArena&) = delete;
  ParamArena& operator=(const ParamArena&) = delete;

  int64_t chunk_bytes() const { return chunk_bytes_; }
  int64_t chunk_count() const { return chunk_count_; }
  int64_t capacity_bytes() const { return chunk_bytes_ * chunk_count(); }
  bool huge_pages() const { return huge_; }
  const std::string& huge_pages_note() const { return huge_note_; }
  // Chunks needed for `bytes`.
  int64_t ChunksFor(int64_t bytes) const { return (bytes + chunk_bytes_ - 1) / chunk_bytes_; }
  int64_t RoundUp(int64_t bytes) const { return ChunksFor(bytes) * chunk_bytes_; }

  // Takes ChunksFor(bytes) chunks: adjacent free ones, used in place (`composed` false), or
  // else any free ones mapped into a new contiguous range (`composed` true). `view` is their
  // writable contiguous view, `ids` the chunks in view order. ResourceExhausted when too few are
  // free; Internal when the kernel refuses a mapping (nothing is taken).
  [[nodiscard]] absl::Status Take(int64_t bytes, std::vector<int>& ids, char*& view,
                                  bool& composed);
  // Returns what Take gave (pages and home mappings are kept for the next Take).
  void Give(const std::vector<int>& ids, char* view, bool composed);
  int fd(int id) const;
  // True when every chunk of `ids` has been written before (pretouched or filled once).
  bool AllTouched(const std::vector<int>& ids) const;

  int64_t free_chunks() const;
  int64_t touched_chunks() const;  // made and touched (warm)
  // Blocks until the background filler has made every chunk (tests, benchmarks).
  void WaitFilled() const;

 private:
  enum class State { kUnmade, kMaking, kFree, kTaken };
  struct Chunk {
    int fd = -1;
    State state = State::kUnmade;
    bool touched = false;
  };
  explicit ParamArena(ParamArenaOptions options) : options_(std::move(options)) {}
  char* Home(int id) const { return base_ + static_cast<int64_t>(id) * chunk_bytes_; }
  // Creates chunk `id` (memfd, size, its home mapping, optional touch, seals) outside the lock;
  // the chunk must be kMaking.
  absl::Status MakeChunk(int id, bool touch, int& fd);
  // The first run of `n` chunks that are free or unmade, or -1.
  int FindRunLocked(int64_t n) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Makes the kUnmade chunks among `ids` (already claimed as kMaking by the caller).
  absl::Status MakeClaimed(const std::vector<int>& ids, std::vector<bool> unmade);
  absl::Status Compose(const std::vector<int>& ids, char*& view);
  void FillLoop();
  int64_t PageBytes() const { return huge_ ? int64_t{2} << 20 : 4096; }

  const ParamArenaOptions options_;
  // Fixed once Create returns.
  int64_t chunk_bytes_ = 0;
  int64_t chunk_count_ = 0;
  bool huge_ = false;
  std::string huge_note_;
  char* base_ = nullptr;  // chunk i's home mapping is [Home(i), Home(i) + chunk_bytes_)
  mutable absl::Mutex mu_;
  std::vector<Chunk> chunks_ ABSL_GUARDED_BY(mu_);  // fixed size after Create
  int making_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool filling_ ABSL_GUARDED_BY(mu_) = false;  // the background filler runs
  std::thread filler_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_PARAM_ARENA_H_
