// Why chunks, each its own memfd, rather than one arena memfd handed out with offsets: an
// instance that receives a memfd can map all of it, so one arena fd would show every model on
// the node to every instance; a chunk only ever holds one model at a time. Why mremap: a sealed
// memfd refuses new writable mappings (that is what the seal is for), so the arena keeps the one
// writable mapping it made before sealing and moves it, page tables and all, into each view.
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
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
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

// Writes every page once: the first touch (zeroing, and on a VM the host backing the page) is
// paid here instead of in a fill.
void Touch(char* p, int64_t bytes) {
  if (madvise(p, static_cast<size_t>(bytes), MADV_POPULATE_WRITE) != 0) {
    for (int64_t off = 0; off < bytes; off += 4096) p[off] = 0;
  }
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
  {
    absl::MutexLock l(&a->mu_);
    a->chunks_.resize(static_cast<size_t>(n));
    for (int64_t i = n - 1; i >= 0; --i) a->unmade_.push_back(static_cast<int>(i));
  }
  if (o.pretouch == Pretouch::kAtStart) {
    for (int64_t i = 0; i < n; ++i) {
      int id;
      {
        absl::MutexLock l(&a->mu_);
        id = a->ClaimUnmadeLocked();
      }
      Chunk c;
      absl::Status s = a->MakeChunk(c, true);
      absl::MutexLock l(&a->mu_);
      --a->making_;
      if (!s.ok()) {
        a->ReleaseUnmadeLocked(id);
        return s;
      }
      a->chunks_[static_cast<size_t>(id)] = c;
      a->free_.push_back(id);
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
    if (c.addr != nullptr) munmap(c.addr, static_cast<size_t>(chunk_bytes_));
    if (c.fd >= 0) close(c.fd);
  }
}

int ParamArena::ClaimUnmadeLocked() {
  if (unmade_.empty()) return -1;
  ++making_;
  const int id = unmade_.back();
  unmade_.pop_back();
  return id;
}

void ParamArena::ReleaseUnmadeLocked(int id) { unmade_.push_back(id); }

absl::Status ParamArena::MakeChunk(Chunk& c, bool touch) {
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
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    absl::Status s = Errno("mmap arena chunk");
    close(fd);
    return s;
  }
  if (touch) Touch(static_cast<char*>(p), chunk_bytes_);
  // After the mapping exists: the seal stops new writable mappings and write(2), not this one.
  if (fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    absl::Status s = Errno("sealing arena chunk");
    munmap(p, n);
    close(fd);
    return s;
  }
  c.fd = fd;
  c.addr = static_cast<char*>(p);
  c.made = true;
  c.touched = touch;
  return absl::OkStatus();
}

void ParamArena::FillLoop() {
  for (;;) {
    int id;
    {
      absl::MutexLock l(&mu_);
      id = stopping_ ? -1 : ClaimUnmadeLocked();
      if (id < 0) {
        filling_ = false;
        return;
      }
    }
    Chunk c;
    absl::Status s = MakeChunk(c, true);
    absl::MutexLock l(&mu_);
    --making_;
    if (!s.ok()) {  // leave it unmade (Take() retries it); the filler stops at a failure
      ReleaseUnmadeLocked(id);
      filling_ = false;
      return;
    }
    chunks_[static_cast<size_t>(id)] = c;
    free_.push_back(id);
  }
}

absl::Status ParamArena::Take(int64_t bytes, std::vector<int>& ids, char*& view) {
  const int64_t n = ChunksFor(bytes);
  if (bytes <= 0 || n > chunk_count()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(bytes, " bytes do not fit the arena's ", capacity_bytes(), " bytes"));
  }
  ids.clear();
  std::vector<int> unmade;
  {
    absl::MutexLock l(&mu_);
    while (static_cast<int64_t>(ids.size()) < n && !free_.empty()) {
      ids.push_back(free_.back());
      free_.pop_back();
    }
    while (static_cast<int64_t>(ids.size() + unmade.size()) < n) {
      const int id = ClaimUnmadeLocked();
      if (id < 0) break;
      unmade.push_back(id);
    }
    for (int id : ids) chunks_[static_cast<size_t>(id)].taken = true;
  }
  absl::Status status;
  for (int id : unmade) {  // the filler has not reached these yet: made here, not touched
    Chunk c;
    absl::Status s = MakeChunk(c, false);
    absl::MutexLock l(&mu_);
    --making_;
    if (!s.ok()) {
      status.Update(s);
      ReleaseUnmadeLocked(id);
      continue;
    }
    c.taken = true;
    chunks_[static_cast<size_t>(id)] = c;
    ids.push_back(id);
  }
  if (status.ok() && static_cast<int64_t>(ids.size()) < n) {
    status = absl::ResourceExhaustedError(absl::StrCat(
        "the arena has ", ids.size(), " free chunks of ", chunk_bytes_, " bytes, ", n, " needed"));
  }
  // A view reserved with room to align it for huge pages; chunks are moved into it.
  const size_t span = static_cast<size_t>(n * chunk_bytes_);
  const size_t align = static_cast<size_t>(PageBytes());
  char* base = nullptr;
  if (status.ok()) {
    void* r = mmap(nullptr, span + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (r == MAP_FAILED) {
      status = Errno("reserving a segment view");
    } else {
      char* raw = static_cast<char*>(r);
      base = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + align - 1) & ~(align - 1));
      if (base > raw) munmap(raw, static_cast<size_t>(base - raw));
      if (raw + span + align > base + span) {
        munmap(base + span, static_cast<size_t>(raw + span + align - (base + span)));
      }
    }
  }
  absl::MutexLock l(&mu_);
  for (size_t i = 0; status.ok() && i < ids.size(); ++i) {
    Chunk& c = chunks_[static_cast<size_t>(ids[i])];
    char* to = base + static_cast<int64_t>(i) * chunk_bytes_;
    void* moved = mremap(c.addr, static_cast<size_t>(chunk_bytes_),
                         static_cast<size_t>(chunk_bytes_), MREMAP_MAYMOVE | MREMAP_FIXED, to);
    if (moved == MAP_FAILED) {
      status = Errno("moving an arena chunk into a view");
      // Slots not yet filled still hold the reservation.
      munmap(to, span - i * static_cast<size_t>(chunk_bytes_));
      break;
    }
    c.addr = to;
  }
  if (status.ok() && mprotect(base, span, PROT_READ | PROT_WRITE) != 0) {
    status = Errno("mprotect segment view");
  }
  if (!status.ok()) {
    for (int id : ids) {
      chunks_[static_cast<size_t>(id)].taken = false;
      free_.push_back(id);
    }
    ids.clear();
    return status;
  }
  view = base;
  return absl::OkStatus();
}

void ParamArena::Give(const std::vector<int>& ids) {
  absl::MutexLock l(&mu_);
  for (int id : ids) {
    Chunk& c = chunks_[static_cast<size_t>(id)];
    SLUICE_CHECK(c.taken);
    c.taken = false;
    c.touched = true;  // whatever filled it touched it
    free_.push_back(id);
  }
}

int ParamArena::fd(int id) const {
  absl::MutexLock l(&mu_);
  return chunks_[static_cast<size_t>(id)].fd;
}

int64_t ParamArena::free_chunks() const {
  absl::MutexLock l(&mu_);
  return static_cast<int64_t>(free_.size() + unmade_.size());
}

int64_t ParamArena::touched_chunks() const {
  absl::MutexLock l(&mu_);
  return std::count_if(chunks_.begin(), chunks_.end(), [](const Chunk& c) { return c.touched; });
}

void ParamArena::WaitFilled() const {
  absl::MutexLock l(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !filling_ && making_ == 0;
  };
  mu_.Await(absl::Condition(&done));
}

}  // namespace sluice::runtime
