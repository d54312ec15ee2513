// GpuSegment: creation with O_EXCL (so two servers never share a GPU's segment), stale-segment
// takeover, header initialisation and publication of `magic` last.
#include "runtime/agent/gpu_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {
namespace {

absl::Status Errno(absl::string_view what, const std::string& name) {
  return absl::InternalError(absl::StrCat(what, " ", name, ": ", std::strerror(errno)));
}

// True when `name` exists and its creator is still running.
bool OwnedByLiveServer(const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  void* p = mmap(nullptr, sizeof(SluiceShmHeader), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return false;
  const auto* h = static_cast<const SluiceShmHeader*>(p);
  const pid_t pid = static_cast<pid_t>(h->server_pid);
  const bool live = pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
  munmap(p, sizeof(SluiceShmHeader));
  return live;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuSegment>> GpuSegment::Create(const SegmentOptions& o) {
  if (o.gpu_uuid.empty() || o.gpu_uuid.size() >= SLUICE_UUID_BYTES) {
    return absl::InvalidArgumentError(absl::StrCat("bad GPU uuid '", o.gpu_uuid, "'"));
  }
  if (o.slot_count == 0 || o.slot_count > SLUICE_MAX_SLOTS) {
    return absl::InvalidArgumentError(absl::StrCat("slot_count must be in [1, ", SLUICE_MAX_SLOTS,
                                                   "], got ", o.slot_count));
  }
  const std::string name = o.shm_name.empty() ? SLUICE_SHM_PREFIX + o.gpu_uuid : o.shm_name;
  if (name.size() >= SLUICE_SHM_NAME_BYTES || name[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("bad shm name '", name, "'"));
  }
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, o.mode);
  if (fd < 0 && errno == EEXIST) {
    if (OwnedByLiveServer(name)) {
      return absl::AlreadyExistsError(absl::StrCat("a live token server owns ", name));
    }
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, o.mode);
  }
  if (fd < 0) return Errno("shm_open", name);
  fchmod(fd, o.mode);  // shm_open's mode is filtered by the umask
  const size_t bytes = SluiceShmBytes(o.slot_count);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    shm_unlink(name.c_str());
    return Errno("ftruncate", name);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    return Errno("mmap", name);
  }
  std::memset(p, 0, bytes);  // all slots FREE, budgets 0
  auto* h = static_cast<SluiceShmHeader*>(p);
  h->version_major = SLUICE_PROTO_MAJOR;
  h->version_minor = SLUICE_PROTO_MINOR;
  h->header_bytes = sizeof(SluiceShmHeader);
  h->slot_bytes = sizeof(SluiceSlot);
  h->slot_count = o.slot_count;
  h->server_pid = static_cast<uint32_t>(getpid());
  h->fail_policy = o.fail_policy;
  h->period_ns = o.period_ns;
  h->max_tokens = o.max_tokens;
  h->fail_timeout_ns = o.fail_timeout_ns;
  h->time_window_ns = o.time_window_ns;
  std::snprintf(h->gpu_uuid, sizeof(h->gpu_uuid), "%s", o.gpu_uuid.c_str());
  Shared(h->magic).store(SLUICE_SHM_MAGIC, std::memory_order_release);
  return std::unique_ptr<GpuSegment>(new GpuSegment(h, name, bytes));
}

GpuSegment::~GpuSegment() {
  shm_unlink(name_.c_str());
  munmap(header_, bytes_);
}

}  // namespace sluice::runtime
