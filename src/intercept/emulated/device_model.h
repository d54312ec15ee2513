// DeviceModel: the emulated GPU as every process on the host sees it, in one shared-memory
// segment /dev/shm/sluice-emu-<uuid>. Kernels reserve time on one shared device timeline
// (CLOCK_MONOTONIC ns): the device runs `sm_count` blocks per block time in aggregate, so a
// kernel of B blocks at t ns per block holds the whole device for ceil(B / sm_count) * t ns, and
// kernels of different processes queue behind each other. Device memory is a capacity shared by
// all processes, charged per pid so a dead process's memory is reclaimed.
// Thread-safe and process-safe: all mutable fields are atomics in the segment.
#ifndef SLUICE_INTERCEPT_EMULATED_DEVICE_MODEL_H_
#define SLUICE_INTERCEPT_EMULATED_DEVICE_MODEL_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace sluice::intercept {

inline constexpr int kEmuMaxProcs = 128;

// Settings read from the environment by the process that creates the segment; later processes
// use the segment's values (so one device looks the same to everyone).
//   SLUICE_EMU_UUID        "EMU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (default ...0001)
//   SLUICE_EMU_SM_COUNT    default 108
//   SLUICE_EMU_MEMORY_MB   default 40960
//   SLUICE_EMU_BLOCK_NS    per-block time of kernels without a cost parameter, default 10000
//   SLUICE_EMU_QUEUE_US    how far ahead of now work may be queued before launches block
//                          (the device's launch queue), default 20000
struct DeviceConfig {
  std::string uuid = "EMU-00000000-0000-0000-0000-000000000001";
  int sm_count = 108;
  int64_t memory_bytes = int64_t{40960} << 20;
  int64_t block_ns = 10000;
  int64_t queue_ns = 20000000;
  static DeviceConfig FromEnv();
};

// CLOCK_MONOTONIC in nanoseconds.
int64_t MonoNowNs();
// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (returns at once if already past).
void SleepUntilNs(int64_t deadline_ns);

class DeviceModel {
 public:
  // Opens or creates the segment for `config.uuid`. Returns nullptr if shared memory fails.
  static DeviceModel* Open(const DeviceConfig& config);

  const char* uuid() const;
  // The 16 UUID bytes parsed from the hex digits of uuid() (a hash if it has none).
  void UuidBytes(unsigned char out[16]) const;
  int sm_count() const;
  int64_t memory_bytes() const;
  int64_t block_ns() const;

  // Reserves device time for a kernel: blocks until the device queue has room, then places the
  // kernel at max(now, device busy-until, `not_before_ns`). Returns its completion time.
  int64_t ReserveKernel(int64_t blocks, int64_t block_ns, int64_t not_before_ns);
  // Device time a kernel of `blocks` blocks at `block_ns` each occupies.
  int64_t KernelNs(int64_t blocks, int64_t block_ns) const;

  // Charges `bytes` of device memory to this process; false if the device would be over
  // capacity (after reclaiming the charges of dead processes).
  bool ChargeMemory(int64_t bytes);
  void ReleaseMemory(int64_t bytes);
  // Device memory in use by all live processes (dead ones are reclaimed first).
  int64_t MemoryUsed();

  // Lifetime totals over all processes (observability and tests).
  int64_t kernels_run() const;
  int64_t blocks_run() const;

 private:
  struct Segment;
  explicit DeviceModel(Segment* seg) : seg_(seg) {}
  int ProcEntry();  // this process's charge entry, claimed on first use; -1 if the table is full
  void ReclaimDead();

  Segment* seg_;
  std::atomic<int> proc_entry_{-1};
};

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_EMULATED_DEVICE_MODEL_H_
