// CudaGpu over the driver API. Entry points are called directly (not through dlopen) so the
// interception library, LD_PRELOADed into instances, sees every call; the sluiceEmu* extensions
// are looked up with dlsym because a real driver lacks them.
#include "runtime/sdk/cuda_gpu.h"

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "intercept/emulated/spin_ptx.h"

namespace sluice::runtime {
namespace {

absl::Status Check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) {
    return absl::OkStatus();
  }
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  return absl::FailedPreconditionError(
      absl::StrCat(call, " failed: ", name != nullptr ? name : "error ", static_cast<int>(r)));
}
#define SLUICE_CU(call) SLUICE_RETURN_IF_ERROR(Check((call), #call))

std::string FormatUuid(const CUuuid& uuid, bool emulated) {
  std::string out = emulated ? "EMU-" : "GPU-";
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  for (int i = 0; i < 16; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof(hex), "%02x", b[i]);
    out += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) {
      out += '-';
    }
  }
  return out;
}

// A sluiceEmu* extension of the emulated driver. Found globally when the program loaded the
// driver itself; under the interception library (which takes libcuda.so.1's place and dlopens
// the driver RTLD_LOCAL) it is searched in every loaded object instead. Null on a real driver.
void* EmuSymbol(const char* name) {
  if (void* s = dlsym(RTLD_DEFAULT, name)) {
    return s;
  }
  struct Search {
    const char* name;
    void* found;
  } search = {name, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') {
          return 0;
        }
        void* h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        if (h == nullptr) {
          return 0;
        }
        s->found = dlsym(h, s->name);
        dlclose(h);  // RTLD_NOLOAD took a reference; the object stays loaded
        return s->found != nullptr ? 1 : 0;
      },
      &search);
  return search.found;
}

using RegisterFn = int (*)(const char*, uint64_t, int, const uint32_t*, int, SluiceEmuKernelBody,
                           void*);
using StatsFn = int (*)(SluiceEmuStats*);

// The UUID the platform calls this device by: the emulated driver's own string, else GPU-...
std::string DeviceUuid(CUdevice dev, bool emulated) {
  if (emulated) {
    auto stats = reinterpret_cast<StatsFn>(EmuSymbol("sluiceEmuGetStats"));
    SluiceEmuStats s;
    if (stats != nullptr && stats(&s) == 0) {
      return s.uuid;
    }
  }
  CUuuid uuid;
  if (cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS) {
    return "";
  }
  return FormatUuid(uuid, emulated);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaGpu>> CudaGpu::Init() {
  std::unique_ptr<CudaGpu> g(new CudaGpu);
  SLUICE_CU(cuInit(0));
  g->emulated_ = EmuSymbol("sluiceEmuGetStats") != nullptr;
  int count = 0;
  SLUICE_CU(cuDeviceGetCount(&count));
  if (count < 1) {
    return absl::FailedPreconditionError("CUDA driver reports no device");
  }
  const char* want = std::getenv("SLUICE_GPU_UUID");
  CUdevice dev = -1;
  for (int i = 0; i < count && want != nullptr && *want != '\0'; ++i) {
    CUdevice d;
    SLUICE_CU(cuDeviceGet(&d, i));
    if (DeviceUuid(d, g->emulated_) == want) {
      dev = d;
    }
  }
  if (dev < 0) {
    if (want != nullptr && *want != '\0' && count > 1) {
      return absl::NotFoundError(absl::StrCat("no CUDA device has SLUICE_GPU_UUID ", want));
    }
    SLUICE_CU(cuDeviceGet(&dev, 0));
  }
  g->device_ = dev;
  g->uuid_ = DeviceUuid(dev, g->emulated_);
  char name[256] = {};
  SLUICE_CU(cuDeviceGetName(name, sizeof(name) - 1, dev));
  g->name_ = name;
  g->emulated_ = g->emulated_ || g->name_ == "Sluice Emulated GPU";
  SLUICE_CU(cuDeviceGetAttribute(&g->sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CUcontext ctx;
  SLUICE_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  g->context_ = ctx;
  SLUICE_RETURN_IF_ERROR(g->MakeCurrent());
  CUstream stream;
  SLUICE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  g->stream_ = stream;
  SLUICE_ASSIGN_OR_RETURN(std::vector<Kernel> spin, g->LoadModule(sluice::kSpinPtx, {"spin"}));
  g->spin_ = spin[0];
  return g;
}

CudaGpu::~CudaGpu() {
  if (context_ == nullptr) {
    return;
  }
  if (!MakeCurrent().ok()) {
    return;
  }
  if (stream_ != nullptr) {
    cuStreamSynchronize(static_cast<CUstream>(stream_));
    cuStreamDestroy(static_cast<CUstream>(stream_));
  }
  for (const auto& [ptr, bytes] : allocations_) {
    cuMemFree(static_cast<CUdeviceptr>(ptr));
  }
  for (void* m : modules_) {
    cuModuleUnload(static_cast<CUmodule>(m));
  }
  cuDevicePrimaryCtxRelease(device_);
}

absl::Status CudaGpu::MakeCurrent() {
  SLUICE_CU(cuCtxSetCurrent(static_cast<CUcontext>(context_)));
  return absl::OkStatus();
}

absl::Status CudaGpu::RegisterEmulated(const std::vector<EmulatedKernel>& kernels) {
  if (!emulated_) {
    return absl::OkStatus();
  }
  auto reg = reinterpret_cast<RegisterFn>(EmuSymbol("sluiceEmuRegisterKernel"));
  if (reg == nullptr) {
    return absl::FailedPreconditionError("emulated device without sluiceEmuRegisterKernel");
  }
  for (const EmulatedKernel& k : kernels) {
    const int r = reg(k.name.c_str(), 0, -1, k.param_sizes.data(),
                      static_cast<int>(k.param_sizes.size()), k.body, nullptr);
    if (r != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("sluiceEmuRegisterKernel(", k.name, ") failed: ", r));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Kernel>> CudaGpu::LoadModule(const std::string& ptx,
                                                        const std::vector<std::string>& names) {
  SLUICE_RETURN_IF_ERROR(MakeCurrent());
  CUmodule module;
  SLUICE_CU(cuModuleLoadData(&module, ptx.c_str()));
  modules_.push_back(module);
  std::vector<Kernel> out;
  for (const std::string& n : names) {
    CUfunction f;
    SLUICE_RETURN_IF_ERROR(
        Check(cuModuleGetFunction(&f, module, n.c_str()), ("cuModuleGetFunction " + n).c_str()));
    out.push_back({f, n});
  }
  return out;
}

absl::StatusOr<DevicePtr> CudaGpu::Alloc(size_t bytes) {
  SLUICE_RETURN_IF_ERROR(MakeCurrent());
  CUdeviceptr p = 0;
  SLUICE_CU(cuMemAlloc(&p, bytes));
  allocations_.push_back({p, bytes});
  allocated_bytes_ += static_cast<int64_t>(bytes);
  if (allocated_bytes_ > peak_bytes_) {
    peak_bytes_ = allocated_bytes_;
  }
  return static_cast<DevicePtr>(p);
}

absl::Status CudaGpu::Free(DevicePtr ptr) {
  for (auto it = allocations_.begin(); it != allocations_.end(); ++it) {
    if (it->first != ptr) {
      continue;
    }
    SLUICE_RETURN_IF_ERROR(MakeCurrent());
    SLUICE_CU(cuMemFree(static_cast<CUdeviceptr>(ptr)));
    allocated_bytes_ -= static_cast<int64_t>(it->second);
    allocations_.erase(it);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("Free: pointer was not allocated by this CudaGpu");
}

absl::Status CudaGpu::CopyHtoD(DevicePtr dst, const void* src, size_t bytes) {
  SLUICE_RETURN_IF_ERROR(MakeCurrent());
  SLUICE_CU(cuMemcpyHtoD(static_cast<CUdeviceptr>(dst), src, bytes));
  return absl::OkStatus();
}

absl::Status CudaGpu::CopyDtoH(void* dst, DevicePtr src, size_t bytes) {
  SLUICE_RETURN_IF_ERROR(MakeCurrent());
  // cuMemcpyDtoH synchronises with the legacy stream only; our stream is non-blocking.
  SLUICE_RETURN_IF_ERROR(Synchronize());
  SLUICE_CU(cuMemcpyDtoH(dst, static_cast<CUdeviceptr>(src), bytes));
  return absl::OkStatus();
}

absl::Status CudaGpu::Launch(const Kernel& k, unsigned grid, unsigned block, void** params) {
  SLUICE_RETURN_IF_ERROR(MakeCurrent());
  SLUICE_RETURN_IF_ERROR(
      Check(cuLaunchKernel(static_cast<CUfunction>(k.handle), grid, 1, 1, block, 1, 1, 0,
                           static_cast<CUstream>(stream_), params, nullptr),
            ("cuLaunchKernel " + k.name).c_str()));
  return absl::OkStatus();
}

absl::Status CudaGpu::Spin(int64_t blocks) {
  if (blocks <= 0) {
    return absl::OkStatus();
  }
  uint64_t ns = kSpinBlockNs;
  void* params[] = {&ns};
  // Grids are capped (2^31 - 1 blocks in x); a huge request becomes several launches.
  constexpr int64_t kMaxGrid = int64_t{1} << 30;
  for (int64_t left = blocks; left > 0; left -= kMaxGrid) {
    const unsigned grid = static_cast<unsigned>(left < kMaxGrid ? left : kMaxGrid);
    SLUICE_RETURN_IF_ERROR(Launch(spin_, grid, 1, params));
  }
  return absl::OkStatus();
}

absl::Status CudaGpu::Synchronize() {
  SLUICE_RETURN_IF_ERROR(MakeCurrent());
  SLUICE_CU(cuStreamSynchronize(static_cast<CUstream>(stream_)));
  return absl::OkStatus();
}

int64_t ModelledBlocks(int64_t batch, int64_t default_base, int64_t default_per_item) {
  auto read = [](const char* var, int64_t fallback) {
    int64_t v = fallback;
    const char* s = std::getenv(var);
    if (s != nullptr && *s != '\0' && !absl::SimpleAtoi(s, &v)) {
      v = fallback;
    }
    return v < 0 ? 0 : v;
  };
  return read("SLUICE_EXAMPLE_BLOCKS_BASE", default_base) +
         read("SLUICE_EXAMPLE_BLOCKS_PER_ITEM", default_per_item) * batch;
}

}  // namespace sluice::runtime
