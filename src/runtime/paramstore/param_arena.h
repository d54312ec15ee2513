// ParamArena: the parameter store's pre-touched host memory (ServerlessLLM's pinned-pool idea,
// docs/parameter-store.md "The arena"). The store's capacity is cut into equal chunks, each its
// own memfd, written once (so the kernel and the hypervisor back every page) when the arena
// starts, or by a background thread, then sealed against writes by anyone else
// (F_SEAL_FUTURE_WRITE, F_SEAL_SHRINK/GROW, F_SEAL_SEAL) while the arena keeps its own writable
// mapping. A model's segment (segment.h) is a run of chunks moved (mremap, no page faults) into
// one contiguous view, so fills write into warm pages; instances receive the chunks' fds.
// Used by ParamStore (one arena per store). Thread safety: every member may be called from any
// thread (one absl::Mutex); the background filler is joined by the destructor.
//
// Chunk states: kUnmade -> kFree (created; touched unless pretouch is kNone) -> kTaken (part of
// a segment) -> kFree (segment gone: the chunk keeps its pages and its mapping, ready for reuse).
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

  // Takes ChunksFor(bytes) free chunks, makes them writable and moves their mappings into one
  // contiguous view (returned in `view`; ids in `ids`, in view order). ResourceExhausted when
  // too few chunks are free; Internal when the kernel refuses a mapping (nothing is taken).
  [[nodiscard]] absl::Status Take(int64_t bytes, std::vector<int>& ids, char*& view);
  // Returns taken chunks (their pages and mappings are kept for the next Take).
  void Give(const std::vector<int>& ids);
  int fd(int id) const;

  int64_t free_chunks() const;
  int64_t touched_chunks() const;  // made and touched (warm)
  // Blocks until the background filler has made every chunk (tests, benchmarks).
  void WaitFilled() const;

 private:
  struct Chunk {
    int fd = -1;
    char* addr = nullptr;  // the arena's writable mapping (moved into views by Take)
    bool made = false;
    bool touched = false;
    bool taken = false;
  };
  explicit ParamArena(ParamArenaOptions options) : options_(std::move(options)) {}
  // Creates chunk `id` (memfd, size, mapping, optional touch, seals) outside the lock.
  absl::Status MakeChunk(Chunk& c, bool touch);
  // Claims an unmade chunk (returns its id) or -1; a failed make hands it back.
  int ClaimUnmadeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseUnmadeLocked(int id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillLoop();
  int64_t PageBytes() const { return huge_ ? int64_t{2} << 20 : 4096; }

  const ParamArenaOptions options_;
  int64_t chunk_bytes_ = 0;  // these three are fixed once Create returns
  int64_t chunk_count_ = 0;
  bool huge_ = false;
  std::string huge_note_;
  mutable absl::Mutex mu_;
  std::vector<Chunk> chunks_ ABSL_GUARDED_BY(mu_);  // fixed size after Create
  std::vector<int> free_ ABSL_GUARDED_BY(mu_);      // made, not taken (LIFO: warmest first)
  std::vector<int> unmade_ ABSL_GUARDED_BY(mu_);    // neither made nor being made
  int making_ ABSL_GUARDED_BY(mu_) = 0;             // claimed but not yet made
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool filling_ ABSL_GUARDED_BY(mu_) = false;  // the background filler runs
  std::thread filler_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_PARAM_ARENA_H_
