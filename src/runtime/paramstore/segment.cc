// The instance side maps each chunk fd at its place in one reserved range, so a model is one
// contiguous array for the instance as it is for the store (docs/parameter-store.md compares
// this with shm_open and QUART's fork).
#include "runtime/paramstore/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/paramstore/checksum.h"

namespace sluice::runtime {
namespace {

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
constexpr int kWriteSeals = F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;
constexpr size_t kViewAlign = size_t{2} << 20;  // huge-page chunks need 2 MiB-aligned views

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

// A PROT_NONE range of `span` bytes aligned to kViewAlign, or nullptr.
char* ReserveAligned(size_t span) {
  void* r = mmap(nullptr, span + kViewAlign, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  char* raw = static_cast<char*>(r);
  char* base = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(raw) + kViewAlign - 1) & ~(kViewAlign - 1));
  if (base > raw) munmap(raw, static_cast<size_t>(base - raw));
  char* end = raw + span + kViewAlign;
  if (end > base + span) munmap(base + span, static_cast<size_t>(end - (base + span)));
  return base;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParamSegment>> ParamSegment::Create(
    std::shared_ptr<ParamArena> arena, int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("segment size must be > 0");
  std::vector<int> ids;
  char* view = nullptr;
  bool composed = false;
  SLUICE_RETURN_IF_ERROR(arena->Take(bytes, ids, view, composed));
  const int64_t span = arena->RoundUp(bytes);
  // Only the tail: the fill overwrites [0, bytes), and until Commit nobody else sees it.
  if (span > bytes) std::memset(view + bytes, 0, static_cast<size_t>(span - bytes));
  const int64_t chunk = arena->chunk_bytes();
  auto s = std::unique_ptr<ParamSegment>(
      new ParamSegment(std::move(arena), std::move(ids), view, bytes, chunk, false));
  s->composed_ = composed;
  s->warm_ = !composed && s->arena_->AllTouched(s->ids_);
  return s;
}

absl::StatusOr<std::unique_ptr<ParamSegment>> ParamSegment::MapChunksReadOnly(
    std::vector<int> fds, int64_t chunk_bytes, int64_t bytes, bool populate) {
  const int64_t need = chunk_bytes > 0 ? (bytes + chunk_bytes - 1) / chunk_bytes : -1;
  if (bytes <= 0 || chunk_bytes <= 0 || static_cast<int64_t>(fds.size()) != need) {
    CloseAll(fds);
    return absl::InvalidArgumentError(absl::StrCat("a segment of ", bytes, " bytes in chunks of ",
                                                   chunk_bytes, " needs ", need, " fds, got ",
                                                   fds.size()));
  }
  for (int fd : fds) {
    struct stat st {};
    const int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0 || seals < 0 || (seals & kWriteSeals) == 0 ||
        st.st_size != chunk_bytes) {
      CloseAll(fds);
      return absl::InvalidArgumentError(absl::StrCat(
          "fd is not a sealed parameter chunk of ", chunk_bytes, " bytes"));
    }
  }
  const size_t span = static_cast<size_t>(need * chunk_bytes);
  char* base = ReserveAligned(span);
  if (base == nullptr) {
    CloseAll(fds);
    return absl::ResourceExhaustedError("reserving the segment's address range");
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    void* p = mmap(base + i * static_cast<size_t>(chunk_bytes), static_cast<size_t>(chunk_bytes),
                   PROT_READ, MAP_SHARED | MAP_FIXED | (populate ? MAP_POPULATE : 0), fds[i], 0);
    if (p == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      munmap(base, span);
      CloseAll(fds);
      return absl::InternalError("mapping a parameter chunk read-only: " + why);
    }
  }
  CloseAll(fds);  // the mappings keep the chunks
  return std::unique_ptr<ParamSegment>(
      new ParamSegment(nullptr, {}, base, bytes, chunk_bytes, true));
}

ParamSegment::~ParamSegment() {
  if (arena_ != nullptr) {
    arena_->Give(ids_, data_, composed_);
  } else if (data_ != nullptr) {
    const int64_t n = (size_ + chunk_bytes_ - 1) / chunk_bytes_;
    munmap(data_, static_cast<size_t>(n * chunk_bytes_));
  }
}

std::vector<int> ParamSegment::fds() const {
  std::vector<int> out;
  out.reserve(ids_.size());
  for (int id : ids_) out.push_back(arena_->fd(id));
  return out;
}

FileSpan ParamSegment::FileAt(int64_t offset) const {
  SLUICE_CHECK(arena_ != nullptr && offset >= 0 && offset < size_);
  const int64_t i = offset / chunk_bytes_;
  const int64_t in = offset - i * chunk_bytes_;
  return {arena_->fd(ids_[static_cast<size_t>(i)]), in,
          std::min(chunk_bytes_ - in, size_ - offset)};
}

void ParamSegment::Prepare(int64_t offset, int64_t bytes) {
  // On warm chunks populating is pure cost: on this VM each already-present page still costs a
  // trap (measured: fills at 0.14 GiB/s with it, docs/parameter-store.md).
  if (sealed_ || data_ == nullptr || warm_) return;
  const int64_t page = 4096;
  const int64_t begin = offset / page * page;
  const int64_t end = std::min(size_, offset + bytes);
  if (end > begin) madvise(data_ + begin, static_cast<size_t>(end - begin), MADV_POPULATE_WRITE);
}

uint64_t ParamSegment::PieceChecksum(int64_t piece_bytes, int64_t index) const {
  SLUICE_CHECK(piece_bytes > 0 && index >= 0 && index * piece_bytes < size_);
  const size_t n = static_cast<size_t>((size_ + piece_bytes - 1) / piece_bytes);
  const size_t i = static_cast<size_t>(index);
  {
    absl::MutexLock l(&sums_mu_);
    if (sums_piece_ == piece_bytes && sums_known_[i]) return sums_[i];
  }
  const int64_t off = index * piece_bytes;
  const uint64_t sum =
      FrameChecksum(data_ + off, static_cast<size_t>(std::min(piece_bytes, size_ - off)));
  absl::MutexLock l(&sums_mu_);
  if (sums_piece_ != piece_bytes) {  // one piece size is kept (a node's chains use one)
    sums_piece_ = piece_bytes;
    sums_.assign(n, 0);
    sums_known_.assign(n, false);
  }
  sums_[i] = sum;
  sums_known_[i] = true;
  return sum;
}

void ParamSegment::KeepPieceChecksums(int64_t piece_bytes, std::vector<uint64_t> sums) {
  if (piece_bytes <= 0 ||
      static_cast<int64_t>(sums.size()) != (size_ + piece_bytes - 1) / piece_bytes) {
    return;
  }
  absl::MutexLock l(&sums_mu_);
  sums_piece_ = piece_bytes;
  sums_known_.assign(sums.size(), true);
  sums_ = std::move(sums);
}

absl::Status ParamSegment::Seal() {
  if (sealed_) return absl::OkStatus();
  // The store's own mapping stays writable (mprotect would drop the hypervisor's page tables on
  // a shadow-paging VM, making the next fill of these chunks slow again); nothing in the store
  // writes a sealed segment, and the chunk seals keep every other process from writing.
  sealed_ = true;
  return absl::OkStatus();
}

}  // namespace sluice::runtime
