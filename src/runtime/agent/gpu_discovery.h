// GPU discovery for the node agent: real GPUs through NVML (libnvidia-ml.so.1 opened with
// dlopen, so no NVML headers or link dependency), or private emulated GPUs with unique EMU-
// UUIDs when none is present. Used by AgentDaemon. Thread-compatible.
#ifndef SLUICE_RUNTIME_AGENT_GPU_DISCOVERY_H_
#define SLUICE_RUNTIME_AGENT_GPU_DISCOVERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::runtime {

struct GpuInfo {
  std::string uuid;   // "GPU-..." (NVML) or "EMU-..." (emulated)
  std::string name;
  int index = 0;      // CUDA_VISIBLE_DEVICES index for real GPUs
  int sm_count = 0;   // 0 when unknown (NVML does not report it; the probe fills it in)
  int64_t memory_bytes = 0;
  bool emulated = false;
};

// The GPUs NVML reports. NotFound when libnvidia-ml.so.1 cannot be loaded; Unavailable when
// NVML fails to initialise or reports no device.
absl::StatusOr<std::vector<GpuInfo>> DiscoverNvmlGpus();

// `count` private emulated GPUs: UUIDs "EMU-<pid>-5a4e-<index>-0000-<stamp>" (32 hex digits,
// unique per agent process and start time), name "Sluice Emulated GPU", the given SMs and memory.
// The device segments are created by the first process that opens each device.
std::vector<GpuInfo> MakeEmulatedGpus(int count, int sm_count, int64_t memory_mb,
                                      int64_t stamp_ns);

// The shared-memory name of an emulated device (what to shm_unlink when done).
std::string EmulatedSegmentName(const std::string& emu_uuid);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_GPU_DISCOVERY_H_
