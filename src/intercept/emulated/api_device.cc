// Emulated driver API: initialisation, version, the one device and its attributes, primary and
// created contexts and the thread's context stack.
#include "intercept/emulated/emu_state.h"

#include <cstdio>
#include <cstring>

using sluice::intercept::emu::Emu;
namespace emu = sluice::intercept::emu;

namespace {
constexpr int kDriverVersion = 13000;  // the CUDA API version the emulation follows
constexpr const char* kDeviceName = "Sluice Emulated GPU";

CUresult CheckDevice(CUdevice dev) {
  if (emu::Get() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

int Attribute(const Emu& e, CUdevice_attribute attr) {
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return e.device->sm_count();
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1410000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 1215000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 8;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    default: return 0;
  }
}
}  // namespace

SLUICE_EMU_API CUresult cuInit(unsigned int flags) {
  return flags != 0 ? CUDA_ERROR_INVALID_VALUE : emu::Init();
}

SLUICE_EMU_API CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = kDriverVersion;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (emu::Get() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  *count = 1;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(ordinal); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  std::snprintf(name, static_cast<size_t>(len), "%s", kDeviceName);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  emu::Get()->device->UuidBytes(reinterpret_cast<unsigned char*>(uuid->bytes));
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}

SLUICE_EMU_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *bytes = static_cast<size_t>(emu::Get()->device->memory_bytes());
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attr, CUdevice dev) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *value = Attribute(*emu::Get(), attr);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  *major = 8;
  *minor = 0;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  EMU_LOCKED(e);
  if (e.primary == nullptr) e.primary = emu::NewContext(e, e.primary_flags, /*primary=*/true);
  ++e.primary_refs;
  *pctx = e.primary;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  EMU_LOCKED(e);
  if (e.primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --e.primary_refs;  // the primary context stays alive (its memory too) until Reset or exit
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  EMU_LOCKED(e);
  if (e.primary != nullptr) emu::DestroyContext(e, e.primary);
  e.primary = nullptr;
  e.primary_refs = 0;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned* flags, int* active) {
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  EMU_LOCKED(e);
  *flags = e.primary_flags;
  *active = e.primary != nullptr && e.primary_refs > 0;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags) {
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  EMU_LOCKED(e);
  e.primary_flags = flags;
  if (e.primary != nullptr) e.primary->flags = flags;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
  EMU_LOCKED(e);
  *pctx = emu::NewContext(e, flags, /*primary=*/false);
  emu::PushCurrent(*pctx);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam*, int, unsigned flags,
                                       CUdevice dev) {
  return cuCtxCreate_v2(pctx, flags, dev);
}

SLUICE_EMU_API CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams*, unsigned flags,
                                       CUdevice dev) {
  return cuCtxCreate_v2(pctx, flags, dev);
}

SLUICE_EMU_API CUresult cuCtxDestroy_v2(CUcontext ctx) {
  EMU_LOCKED(e);
  if (ctx == nullptr || !e.contexts.contains(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  if (emu::PeekCurrent() == ctx) emu::PopCurrent();
  emu::DestroyContext(e, ctx);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  EMU_LOCKED(e);
  if (ctx != nullptr && !e.contexts.contains(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  emu::SetCurrent(ctx);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (emu::Get() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  *pctx = emu::PeekCurrent();
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  EMU_LOCKED(e);
  if (ctx == nullptr || !e.contexts.contains(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  emu::PushCurrent(ctx);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  if (emu::Get() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUctx_st* ctx = emu::PopCurrent();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx != nullptr) *pctx = ctx;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  *device = 0;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxGetFlags(unsigned* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  *flags = ctx->flags;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (emu::Get() == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  *version = 3020;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxSynchronize() {
  int64_t done;
  {
    EMU_LOCKED(e);
    CUctx_st* ctx;
    if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
    done = emu::ContextDone(e, ctx);
  }
  sluice::intercept::SleepUntilNs(done);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  int64_t done;
  {
    EMU_LOCKED(e);
    if (ctx == nullptr && emu::CurrentContext(e, &ctx) != CUDA_SUCCESS) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (!e.contexts.contains(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    done = emu::ContextDone(e, ctx);
  }
  sluice::intercept::SleepUntilNs(done);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (ctx == nullptr && emu::CurrentContext(e, &ctx) != CUDA_SUCCESS) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!e.contexts.contains(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}
