// NVML through dlopen: the few entry points are declared here by hand (their C ABI is stable:
// nvmlReturn_t is an int, nvmlDevice_t an opaque pointer, nvmlMemory_t three unsigned longs).
#include "runtime/agent/gpu_discovery.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {
namespace {

using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total, free, used;
};
using InitFn = int (*)();
using CountFn = int (*)(unsigned*);
using HandleFn = int (*)(unsigned, NvmlDevice*);
using StringFn = int (*)(NvmlDevice, char*, unsigned);
using MemoryFn = int (*)(NvmlDevice, NvmlMemory*);

struct Nvml {
  InitFn init = nullptr, shutdown = nullptr;
  CountFn count = nullptr;
  HandleFn handle = nullptr;
  StringFn uuid = nullptr, name = nullptr;
  MemoryFn memory = nullptr;
  bool Complete() const { return init && shutdown && count && handle && uuid && name && memory; }
};

Nvml Resolve(void* lib) {
  Nvml n;
  n.init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  n.shutdown = reinterpret_cast<InitFn>(dlsym(lib, "nvmlShutdown"));
  n.count = reinterpret_cast<CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  n.handle = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  n.uuid = reinterpret_cast<StringFn>(dlsym(lib, "nvmlDeviceGetUUID"));
  n.name = reinterpret_cast<StringFn>(dlsym(lib, "nvmlDeviceGetName"));
  n.memory = reinterpret_cast<MemoryFn>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  return n;
}

absl::StatusOr<std::vector<GpuInfo>> Enumerate(const Nvml& n) {
  unsigned count = 0;
  if (int rc = n.count(&count); rc != 0) {
    return absl::UnavailableError(absl::StrCat("nvmlDeviceGetCount_v2 failed: ", rc));
  }
  std::vector<GpuInfo> gpus;
  for (unsigned i = 0; i < count; ++i) {
    NvmlDevice dev = nullptr;
    char uuid[96] = {0}, name[96] = {0};
    NvmlMemory mem{};
    if (n.handle(i, &dev) != 0 || n.uuid(dev, uuid, sizeof(uuid)) != 0 ||
        n.name(dev, name, sizeof(name)) != 0 || n.memory(dev, &mem) != 0) {
      return absl::UnavailableError(absl::StrCat("NVML could not describe GPU ", i));
    }
    GpuInfo g;
    g.uuid = uuid;
    g.name = name;
    g.index = static_cast<int>(i);
    g.memory_bytes = static_cast<int64_t>(mem.total);
    gpus.push_back(std::move(g));
  }
  if (gpus.empty()) return absl::UnavailableError("NVML reports no GPU");
  return gpus;
}

}  // namespace

absl::StatusOr<std::vector<GpuInfo>> DiscoverNvmlGpus() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return absl::NotFoundError("libnvidia-ml.so.1 not found (no NVIDIA driver)");
  const Nvml n = Resolve(lib);
  absl::StatusOr<std::vector<GpuInfo>> gpus =
      absl::UnavailableError("libnvidia-ml.so.1 lacks the NVML v2 entry points");
  if (n.Complete()) {
    if (int rc = n.init(); rc != 0) {
      gpus = absl::UnavailableError(absl::StrCat("nvmlInit_v2 failed: ", rc));
    } else {
      gpus = Enumerate(n);
      n.shutdown();
    }
  }
  dlclose(lib);
  return gpus;
}

std::vector<GpuInfo> MakeEmulatedGpus(int count, int sm_count, int64_t memory_mb,
                                      int64_t stamp_ns) {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < count; ++i) {
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "EMU-%08x-5a4e-%04x-0000-%012llx",
                  static_cast<unsigned>(getpid()), static_cast<unsigned>(i) & 0xffffu,
                  static_cast<unsigned long long>(stamp_ns) & 0xffffffffffffULL);
    GpuInfo g;
    g.uuid = uuid;
    g.name = "Sluice Emulated GPU";
    g.index = i;
    g.sm_count = sm_count;
    g.memory_bytes = memory_mb * 1024 * 1024;
    g.emulated = true;
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::string EmulatedSegmentName(const std::string& emu_uuid) { return "/sluice-emu-" + emu_uuid; }

}  // namespace sluice::runtime
