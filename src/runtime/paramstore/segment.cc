// memfd over /dev/shm: no global name to leak after a crash or to be opened by another user, the
// memory goes when the last fd and mapping go, and seals make "read-only" a kernel guarantee
// (docs/parameter-store.md compares it with shm_open and QUART's fork).
#include "runtime/paramstore/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {
namespace {

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1
#endif
// F_SEAL_FUTURE_WRITE, not F_SEAL_WRITE: the latter fails with EBUSY while pages are still
// referenced by in-flight sendfile(2) (a chain member forwarding its last chunks). The writable
// mapping is gone before sealing, so no writer remains either way.
constexpr int kAllSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
constexpr int kWriteSeals = F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;

absl::Status Errno(const std::string& what) {
  const int e = errno;
  const std::string m = absl::StrCat(what, ": ", std::strerror(e));
  return e == ENOMEM || e == ENOSPC ? absl::ResourceExhaustedError(m) : absl::InternalError(m);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParamSegment>> ParamSegment::Create(const std::string& name,
                                                                   int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("segment size must be > 0");
  const int fd = memfd_create(("sluice-params:" + name).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno("memfd_create");
  if (ftruncate(fd, bytes) != 0) {
    absl::Status s = Errno(absl::StrCat("ftruncate ", bytes, " bytes"));
    close(fd);
    return s;
  }
  // Not MAP_POPULATE: zeroing the whole segment up front is an extra pass over memory (and
  // delays the first chunk); Prepare() populates each piece just before it is filled.
  void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    absl::Status s = Errno(absl::StrCat("mmap ", bytes, " bytes"));
    close(fd);
    return s;
  }
  return std::unique_ptr<ParamSegment>(new ParamSegment(fd, bytes, static_cast<char*>(p), false));
}

absl::StatusOr<std::unique_ptr<ParamSegment>> ParamSegment::MapReadOnly(int fd, int64_t bytes) {
  struct stat st {};
  const int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &st) != 0 || seals < 0 || (seals & kWriteSeals) == 0) {
    close(fd);
    return absl::InvalidArgumentError("fd is not a sealed parameter segment");
  }
  if (st.st_size <= 0 || (bytes >= 0 && st.st_size != bytes)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("segment holds ", st.st_size, " bytes, expected ", bytes));
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    absl::Status s = Errno("mmap read-only");
    close(fd);
    return s;
  }
  return std::unique_ptr<ParamSegment>(
      new ParamSegment(fd, st.st_size, static_cast<char*>(p), true));
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

void ParamSegment::Prepare(int64_t offset, int64_t bytes) {
  if (sealed_ || data_ == nullptr) return;
  const int64_t page = 4096;
  const int64_t begin = offset / page * page;
  const int64_t end = std::min(size_, offset + bytes);
  if (end > begin) madvise(data_ + begin, static_cast<size_t>(end - begin), MADV_POPULATE_WRITE);
}

ParamSegment::~ParamSegment() {
  if (data_ != nullptr) munmap(data_, static_cast<size_t>(size_));
  if (fd_ >= 0) close(fd_);
}

absl::Status ParamSegment::Seal() {
  if (sealed_) return absl::OkStatus();
  if (data_ != nullptr && munmap(data_, static_cast<size_t>(size_)) != 0) return Errno("munmap");
  data_ = nullptr;
  if (fcntl(fd_, F_ADD_SEALS, kAllSeals) != 0) return Errno("sealing the segment");
  void* p = mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return Errno("mmap read-only");
  data_ = static_cast<char*>(p);
  sealed_ = true;
  return absl::OkStatus();
}

}  // namespace sluice::runtime
