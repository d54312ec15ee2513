// Why chunks, each its own memfd, rather than one arena memfd handed out with offsets: an
// instance that receives a memfd can map all of it, so one arena fd would show every model on
// the node to every instance; a chunk only ever holds one model at a time. Why segments are
// runs of adjacent chunks used in place: any change to a mapping (mremap, mprotect) drops the
// hypervisor's shadow page tables on this VM, and the next touch of each page pays again. A
// sealed memfd refuses new writable mappings, so a scattered segment's view is made with
// mremap(MREMAP_DONTUNMAP) from the home mappings instead.
#include "runtime/paramstore/param_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {
namespace {

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4  // Linux 5.7; shared mappings since 5.13
#endif
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
constexpr int64_t kHugePage = int64_t{2} << 20;

absl::Status Errno(const std::string& what) {
  const int e = errno;
  const std::string m = absl::StrCat(what, ": ", std::strerror(e));
  return e == ENOMEM || e == ENOSPC ? absl::ResourceExhaustedError(m) : absl::InternalError(m);
}

int64_t AutoChunkBytes(int64_t capacity, bool huge) {
  int64_t c = int64_t{64} << 10;
  while (c * 2 <= capacity / 128 && c < (int64_t{64} << 20)) c *= 2;
  return huge ? std::max(c, kHugePage) : c;
}

// Writes every page once through the arena's own mapping, which never changes afterwards: the
// first touch (allocation, zeroing, and on a shadow-paging VM the hypervisor's page tables) is
// paid here instead of in a fill. MADV_POPULATE_WRITE alone is not enough there: it fills the
// guest's page tables, and the first write still traps (measured: docs/parameter-store.md).
void Touch(char* p, int64_t bytes) { std::memset(p, 0, static_cast<size_t>(bytes)); }

// A PROT_NONE range of `span` bytes aligned to `align`, or nullptr.
char* ReserveAligned(size_t span, size_t align) {
  void* r = mmap(nullptr, span + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (r == MAP_FAILED) return nullptr;
  char* raw = static_cast<char*>(r);
  char* base =
      reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + align - 1) & ~(align - 1));
  if (base > raw) munmap(raw, static_cast<size_t>(base - raw));
  char* end = raw + span + align;
  if (end > base + span) munmap(base + span, static_cast<size_t>(end - (base + span)));
  return base;
}

}  // namespace

absl::StatusOr<Pretouch> ParsePretouch(const std::string& text, const std::string& field) {
  if (text == "start") return Pretouch::kAtStart;
  if (text == "background") return Pretouch::kBackground;
  if (text == "none") return Pretouch::kNone;
  return absl::InvalidArgumentError(absl::StrCat("field '", field, "': '", text,
                                                 "' is not one of start, background, none"));
}

absl::StatusOr<std::shared_ptr<ParamArena>> ParamArena::Create(ParamArenaOptions o) {
  if (o.capacity_bytes <= 0) {
    return absl::InvalidArgumentError("field 'capacity_bytes': must be > 0");
  }
  const int64_t page = o.huge_pages ? kHugePage : 4096;
  if (o.chunk_bytes < 0 || o.chunk_bytes % page != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'chunk_bytes': must be 0 (automatic) or a multiple of ", page));
  }
  std::shared_ptr<ParamArena> a(new ParamArena(o));
  a->huge_ = o.huge_pages;
  if (a->huge_) {  // probe: one huge page must be obtainable, or fall back to 4 KiB pages
    const int fd = memfd_create("sluice-arena-probe", MFD_CLOEXEC | MFD_HUGETLB);
    if (fd < 0 || ftruncate(fd, kHugePage) != 0 || fallocate(fd, 0, 0, kHugePage) != 0) {
      a->huge_ = false;
      a->huge_note_ = absl::StrCat("no huge pages (", std::strerror(errno),
                                   "; reserve them with vm.nr_hugepages): using 4 KiB pages");
    }
    if (fd >= 0) close(fd);
  }
  a->chunk_bytes_ = o.chunk_bytes > 0 ? o.chunk_bytes : AutoChunkBytes(o.capacity_bytes, a->huge_);
  const int64_t n = (o.capacity_bytes + a->chunk_bytes_ - 1) / a->chunk_bytes_;
  a->chunk_count_ = n;
  a->base_ = ReserveAligned(static_cast<size_t>(n * a->chunk_bytes_),
                            static_cast<size_t>(a->PageBytes()));
  if (a->base_ == nullptr) return Errno("reserving the arena's address range");
  {
    absl::MutexLock l(&a->mu_);
    a->chunks_.resize(static_cast<size_t>(n));
    if (o.pretouch == Pretouch::kAtStart) {
      for (Chunk& ch : a->chunks_) ch.state = State::kMaking;
      a->making_ = static_cast<int>(n);
    }
  }
  if (o.pretouch == Pretouch::kAtStart) {
    std::vector<int> all(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
    SLUICE_RETURN_IF_ERROR(a->MakeClaimed(all, std::vector<bool>(all.size(), true)));
    absl::MutexLock l(&a->mu_);
    for (Chunk& ch : a->chunks_) {
      ch.state = State::kFree;
      ch.touched = true;
    }
  } else if (o.pretouch == Pretouch::kBackground) {
    {
      absl::MutexLock l(&a->mu_);
      a->filling_ = true;
    }
    a->filler_ = std::thread([p = a.get()] { p->FillLoop(); });
  }
  return a;
}

ParamArena::~ParamArena() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (filler_.joinable()) filler_.join();
  absl::MutexLock l(&mu_);
  for (Chunk& c : chunks_) {
    if (c.fd >= 0) close(c.fd);
  }
  if (base_ != nullptr) munmap(base_, static_cast<size_t>(chunk_count_ * chunk_bytes_));
}

absl::Status ParamArena::MakeChunk(int id, bool touch, int& out_fd) {
  const unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge_ ? MFD_HUGETLB : 0u);
  const int fd = memfd_create("sluice-params-chunk", flags);
  if (fd < 0) return Errno("memfd_create");
  const size_t n = static_cast<size_t>(chunk_bytes_);
  if (ftruncate(fd, chunk_bytes_) != 0 ||
      (huge_ && fallocate(fd, 0, 0, chunk_bytes_) != 0)) {  // hugetlb: reserve, or fail now
    absl::Status s = Errno(absl::StrCat("sizing a ", chunk_bytes_, "-byte arena chunk"));
    close(fd);
    return s;
  }
  void* p = mmap(Home(id), n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    absl::Status s = Errno("mmap arena chunk");
    close(fd);
    return s;
  }
  if (touch) Touch(static_cast<char*>(p), chunk_bytes_);
  // After the mapping exists: the seal stops new writable mappings and write(2), not this one.
  if (fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    absl::Status s = Errno("sealing arena chunk");
    mmap(p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    close(fd);
    return s;
  }
  out_fd = fd;
  return absl::OkStatus();
}

absl::Status ParamArena::MakeClaimed(const std::vector<int>& ids, std::vector<bool> unmade) {
  absl::Status status;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!unmade[i]) continue;
    int fd = -1;
    // Made for a segment: its fill touches it (pretouching first would write it twice).
    absl::Status s = status.ok() ? MakeChunk(ids[i], options_.pretouch == Pretouch::kAtStart, fd)
                                 : status;
    absl::MutexLock l(&mu_);
    --making_;
    Chunk& c = chunks_[static_cast<size_t>(ids[i])];
    if (!s.ok()) {
      c.state = State::kUnmade;
      status.Update(s);
      continue;
    }
    c.fd = fd;
    c.state = State::kTaken;  // the caller decides (Create frees them all)
  }
  return status;
}

void ParamArena::FillLoop() {
  for (;;) {
    int id = -1;
    {
      absl::MutexLock l(&mu_);
      for (size_t i = 0; !stopping_ && i < chunks_.size() && id < 0; ++i) {
        if (chunks_[i].state == State::kUnmade) id = static_cast<int>(i);
      }
      if (id < 0) {
        filling_ = false;
        return;
      }
      chunks_[static_cast<size_t>(id)].state = State::kMaking;
      ++making_;
    }
    int fd = -1;
    absl::Status s = MakeChunk(id, true, fd);
    absl::MutexLock l(&mu_);
    --making_;
    Chunk& c = chunks_[static_cast<size_t>(id)];
    if (!s.ok()) {  // left unmade (Take makes it when needed); the filler stops at a failure
      c.state = State::kUnmade;
      filling_ = false;
      return;
    }
    c.fd = fd;
    c.state = State::kFree;
    c.touched = true;
  }
}

int ParamArena::FindRunLocked(int64_t n) const {
  int64_t run = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const State s = chunks_[i].state;
    run = s == State::kFree || s == State::kUnmade ? run + 1 : 0;
    if (run == n) return static_cast<int>(static_cast<int64_t>(i) + 1 - n);
  }
  return -1;
}

absl::Status ParamArena::Compose(const std::vector<int>& ids, char*& view) {
  const size_t span = ids.size() * static_cast<size_t>(chunk_bytes_);
  char* v = ReserveAligned(span, static_cast<size_t>(PageBytes()));
  if (v == nullptr) return Errno("reserving a segment view");
  for (size_t i = 0; i < ids.size(); ++i) {
    // DONTUNMAP: the chunk keeps its home mapping; the view is a second one (no new mmap, so
    // the seal does not refuse it).
    void* m = mremap(Home(ids[i]), static_cast<size_t>(chunk_bytes_),
                     static_cast<size_t>(chunk_bytes_),
                     MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
                     v + i * static_cast<size_t>(chunk_bytes_));
    if (m == MAP_FAILED) {
      absl::Status s = Errno("mapping scattered arena chunks into one view");
      munmap(v, span);
      return s;
    }
  }
  view = v;
  return absl::OkStatus();
}

absl::Status ParamArena::Take(int64_t bytes, std::vector<int>& ids, char*& view, bool& composed) {
  const int64_t n = ChunksFor(bytes);
  if (bytes <= 0 || n > chunk_count_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(bytes, " bytes do not fit the arena's ", capacity_bytes(), " bytes"));
  }
  ids.clear();
  std::vector<bool> unmade;
  {
    absl::MutexLock l(&mu_);
    int first = FindRunLocked(n);
    // A chunk the filler is making may be what splits a run: wait for it once.
    if (first < 0 && making_ > 0) {
      auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return making_ == 0; };
      mu_.Await(absl::Condition(&idle));
      first = FindRunLocked(n);
    }
    composed = first < 0;
    for (size_t i = 0; i < chunks_.size() && static_cast<int64_t>(ids.size()) < n; ++i) {
      if (!composed && static_cast<int>(i) < first) continue;
      Chunk& c = chunks_[i];
      if (c.state != State::kFree && c.state != State::kUnmade) continue;
      unmade.push_back(c.state == State::kUnmade);
      if (c.state == State::kUnmade) ++making_;
      c.state = c.state == State::kUnmade ? State::kMaking : State::kTaken;
      ids.push_back(static_cast<int>(i));
    }
    if (static_cast<int64_t>(ids.size()) < n) {
      for (size_t i = 0; i < ids.size(); ++i) {
        chunks_[static_cast<size_t>(ids[i])].state = unmade[i] ? State::kUnmade : State::kFree;
        if (unmade[i]) --making_;
      }
      const std::string m = absl::StrCat("the arena has ", ids.size(), " free chunks of ",
                                         chunk_bytes_, " bytes, ", n, " needed");
      ids.clear();
      return absl::ResourceExhaustedError(m);
    }
  }
  absl::Status s = MakeClaimed(ids, unmade);
  if (s.ok() && composed) s = Compose(ids, view);
  if (!s.ok()) {
    absl::MutexLock l(&mu_);
    for (int id : ids) {
      Chunk& c = chunks_[static_cast<size_t>(id)];
      if (c.state == State::kTaken) c.state = State::kFree;
    }
    ids.clear();
    return s;
  }
  if (!composed) view = Home(ids[0]);
  return absl::OkStatus();
}

void ParamArena::Give(const std::vector<int>& ids, char* view, bool composed) {
  if (composed) munmap(view, ids.size() * static_cast<size_t>(chunk_bytes_));
  absl::MutexLock l(&mu_);
  for (int id : ids) {
    Chunk& c = chunks_[static_cast<size_t>(id)];
    SLUICE_CHECK(c.state == State::kTaken);
    c.state = State::kFree;
    c.touched = true;  // whatever filled it touched it
  }
}

int ParamArena::fd(int id) const {
  absl::MutexLock l(&mu_);
  return chunks_[static_cast<size_t>(id)].fd;
}

bool ParamArena::AllTouched(const std::vector<int>& ids) const {
  absl::MutexLock l(&mu_);
  return std::all_of(ids.begin(), ids.end(),
                     [this](int id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                       return chunks_[static_cast<size_t>(id)].touched;
                     });
}

int64_t ParamArena::free_chunks() const {
  absl::MutexLock l(&mu_);
  return std::count_if(chunks_.begin(), chunks_.end(), [](const Chunk& c) {
    return c.state == State::kFree || c.state == State::kUnmade;
  });
}

int64_t ParamArena::touched_chunks() const {
  absl::MutexLock l(&mu_);
  return std::count_if(chunks_.begin(), chunks_.end(), [](const Chunk& c) { return c.touched; });
}

void ParamArena::WaitFilled() const {
  absl::MutexLock l(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !filling_ && making_ == 0; };
  mu_.Await(absl::Condition(&done));
}

}  // namespace sluice::runtime
