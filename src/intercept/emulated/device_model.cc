// The shared segment behind DeviceModel. Created with O_EXCL by the first process; the creator
// fills it and publishes `magic` last (release); others wait (briefly) for the magic. All
// cross-process fields are lock-free std::atomic, which is address-free on Linux.
#include "intercept/emulated/device_model.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace sluice::intercept {
namespace {

constexpr uint64_t kMagic = 0x554d4553554c53ULL;  // "SLUSEMU"
constexpr uint32_t kVersion = 1;

struct ProcCharge {
  std::atomic<int32_t> pid;  // 0 free, -1 being reclaimed, else the charged process
  int32_t pad;
  std::atomic<int64_t> bytes;
};

int64_t EnvInt(const char* name, int64_t fallback, int64_t min) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return (end == nullptr || *end != '\0' || x < min) ? fallback : x;
}

}  // namespace

struct DeviceModel::Segment {
  std::atomic<uint64_t> magic;
  uint32_t version;
  int32_t sm_count;
  int64_t memory_bytes;
  int64_t block_ns;
  int64_t queue_ns;
  char uuid[64];
  alignas(64) std::atomic<int64_t> busy_until_ns;  // end of the last reserved kernel
  std::atomic<int64_t> kernels_run;
  std::atomic<int64_t> blocks_run;
  alignas(64) std::atomic<int64_t> mem_used;
  ProcCharge procs[kEmuMaxProcs];
};

DeviceConfig DeviceConfig::FromEnv() {
  DeviceConfig c;
  if (const char* u = std::getenv("SLUICE_EMU_UUID"); u != nullptr && *u != '\0') c.uuid = u;
  if (c.uuid.size() > 63) c.uuid.resize(63);
  c.sm_count = static_cast<int>(EnvInt("SLUICE_EMU_SM_COUNT", c.sm_count, 1));
  c.memory_bytes = EnvInt("SLUICE_EMU_MEMORY_MB", c.memory_bytes >> 20, 1) << 20;
  c.block_ns = EnvInt("SLUICE_EMU_BLOCK_NS", c.block_ns, 1);
  c.queue_ns = EnvInt("SLUICE_EMU_QUEUE_US", c.queue_ns / 1000, 1) * 1000;
  return c;
}

int64_t MonoNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SleepUntilNs(int64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / 1000000000), static_cast<long>(deadline_ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

DeviceModel* DeviceModel::Open(const DeviceConfig& config) {
  const std::string name = "/sluice-emu-" + config.uuid;
  bool creator = true;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    creator = false;
    fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  }
  if (fd < 0) return nullptr;
  const size_t bytes = sizeof(Segment);
  if (creator && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return nullptr;
  }
  // A joiner may arrive between the creator's shm_open and ftruncate: wait for the size.
  for (int i = 0; !creator && i < 1000; ++i) {
    struct stat st;
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= bytes) break;
    SleepUntilNs(MonoNowNs() + 1000000);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  auto* seg = static_cast<Segment*>(p);
  if (creator) {
    seg->version = kVersion;
    seg->sm_count = config.sm_count;
    seg->memory_bytes = config.memory_bytes;
    seg->block_ns = config.block_ns;
    seg->queue_ns = config.queue_ns;
    std::snprintf(seg->uuid, sizeof(seg->uuid), "%s", config.uuid.c_str());
    seg->magic.store(kMagic, std::memory_order_release);
  }
  for (int i = 0; i < 1000 && seg->magic.load(std::memory_order_acquire) != kMagic; ++i) {
    SleepUntilNs(MonoNowNs() + 1000000);
  }
  if (seg->magic.load(std::memory_order_acquire) != kMagic || seg->version != kVersion) {
    munmap(p, bytes);
    return nullptr;
  }
  return new DeviceModel(seg);
}

const char* DeviceModel::uuid() const { return seg_->uuid; }
int DeviceModel::sm_count() const { return seg_->sm_count; }
int64_t DeviceModel::memory_bytes() const { return seg_->memory_bytes; }
int64_t DeviceModel::block_ns() const { return seg_->block_ns; }
int64_t DeviceModel::kernels_run() const { return seg_->kernels_run.load(); }
int64_t DeviceModel::blocks_run() const { return seg_->blocks_run.load(); }

void DeviceModel::UuidBytes(unsigned char out[16]) const {
  int n = 0;
  unsigned char b[16] = {};
  const char* s = seg_->uuid;
  if (std::strncmp(s, "EMU-", 4) == 0) s += 4;
  for (; *s != '\0'; ++s) {
    const char c = *s;
    if (c == '-') continue;
    const int v = (c >= '0' && c <= '9') ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (v < 0 || n >= 32) { n = -1; break; }
    b[n / 2] = static_cast<unsigned char>(b[n / 2] | (n % 2 == 0 ? v << 4 : v));
    ++n;
  }
  if (n != 32) {  // not 32 hex digits: FNV-1a over the text, spread over 16 bytes
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 16; ++i) {
      for (const char* t = seg_->uuid; *t != '\0'; ++t) h = (h ^ static_cast<unsigned char>(*t)) * 1099511628211ULL;
      b[i] = static_cast<unsigned char>(h >> 56);
    }
  }
  std::memcpy(out, b, 16);
}

int64_t DeviceModel::KernelNs(int64_t blocks, int64_t block_ns) const {
  const int64_t waves = (std::max<int64_t>(blocks, 1) + seg_->sm_count - 1) / seg_->sm_count;
  return waves * block_ns;
}

int64_t DeviceModel::ReserveKernel(int64_t blocks, int64_t block_ns, int64_t not_before_ns) {
  const int64_t dur = KernelNs(blocks, block_ns);
  int64_t end;
  while (true) {
    const int64_t now = MonoNowNs();
    int64_t cur = seg_->busy_until_ns.load(std::memory_order_acquire);
    if (cur - now > seg_->queue_ns) {  // launch queue full: wait like a real launch would
      SleepUntilNs(cur - seg_->queue_ns);
      continue;
    }
    end = std::max({now, cur, not_before_ns}) + dur;
    if (seg_->busy_until_ns.compare_exchange_weak(cur, end, std::memory_order_acq_rel)) break;
  }
  seg_->kernels_run.fetch_add(1, std::memory_order_relaxed);
  seg_->blocks_run.fetch_add(blocks, std::memory_order_relaxed);
  return end;
}

int DeviceModel::ProcEntry() {
  const int32_t self = static_cast<int32_t>(getpid());
  const int cached = proc_entry_.load();
  if (cached >= 0 && seg_->procs[cached].pid.load() == self) return cached;
  for (int i = 0; i < kEmuMaxProcs; ++i) {
    int32_t expected = 0;
    if (seg_->procs[i].pid.compare_exchange_strong(expected, self)) {
      proc_entry_.store(i);
      return i;
    }
  }
  return -1;
}

void DeviceModel::ReclaimDead() {
  const int32_t self = static_cast<int32_t>(getpid());
  for (ProcCharge& e : seg_->procs) {
    int32_t pid = e.pid.load();
    if (pid <= 0 || pid == self || kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (!e.pid.compare_exchange_strong(pid, -1)) continue;  // someone else is reclaiming it
    seg_->mem_used.fetch_sub(e.bytes.exchange(0));
    e.pid.store(0);
  }
}

bool DeviceModel::ChargeMemory(int64_t bytes) {
  const int entry = ProcEntry();
  if (entry < 0) ReclaimDead();
  const int e = entry >= 0 ? entry : ProcEntry();
  if (e < 0) return false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int64_t used = seg_->mem_used.load();
    while (used + bytes <= seg_->memory_bytes) {
      if (seg_->mem_used.compare_exchange_weak(used, used + bytes)) {
        seg_->procs[e].bytes.fetch_add(bytes);
        return true;
      }
    }
    ReclaimDead();
  }
  return false;
}

void DeviceModel::ReleaseMemory(int64_t bytes) {
  const int e = ProcEntry();
  if (e >= 0) seg_->procs[e].bytes.fetch_sub(bytes);
  seg_->mem_used.fetch_sub(bytes);
}

int64_t DeviceModel::MemoryUsed() {
  ReclaimDead();
  return seg_->mem_used.load();
}

}  // namespace sluice::intercept
