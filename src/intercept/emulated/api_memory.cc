// Emulated driver API: device, managed, host and stream-ordered (pool) allocations and memory
// information. Emulated device memory is host memory; its size is charged to the shared device
// model so the capacity holds across every process on the host.
#include <cstdlib>

#include "intercept/emulated/emu_state.h"

namespace emu = sluice::intercept::emu;
using emu::AllocKind;
using emu::Emu;

namespace sluice::intercept::emu {

CUresult Allocate(Emu& e, CUctx_st* ctx, size_t bytes, AllocKind kind, CUmemoryPool pool,
                  uintptr_t* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t rounded = (bytes + 255) & ~size_t{255};
  if (rounded < bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  const bool charged = kind != AllocKind::kHost;
  if (charged && !e.device->ChargeMemory(static_cast<int64_t>(rounded))) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  void* p = std::aligned_alloc(256, rounded);
  if (p == nullptr) {
    if (charged) e.device->ReleaseMemory(static_cast<int64_t>(rounded));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  e.allocs[reinterpret_cast<uintptr_t>(p)] = Allocation{rounded, kind, ctx, pool, charged};
  *out = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

CUresult Free(Emu& e, uintptr_t ptr, std::initializer_list<AllocKind> kinds) {
  auto it = e.allocs.find(ptr);
  if (it == e.allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  bool ok = false;
  for (AllocKind k : kinds) ok = ok || it->second.kind == k;
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.charged) e.device->ReleaseMemory(static_cast<int64_t>(it->second.size));
  std::free(reinterpret_cast<void*>(ptr));
  e.allocs.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace sluice::intercept::emu

namespace {

CUresult AllocInContext(CUdeviceptr* dptr, size_t bytes, AllocKind kind, CUmemoryPool pool,
                        CUstream stream, bool ptsz) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  if (kind == AllocKind::kAsync && emu::ResolveStream(e, ctx, stream, ptsz) == nullptr) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (kind == AllocKind::kAsync && pool != &e.default_pool && !e.pools.contains(pool)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uintptr_t p;
  if (CUresult r = emu::Allocate(e, ctx, bytes, kind, pool, &p); r != CUDA_SUCCESS) return r;
  *dptr = p;
  return CUDA_SUCCESS;
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream stream, bool ptsz) {
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  if (emu::ResolveStream(e, ctx, stream, ptsz) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // Work already queued ran its host-side effects at launch, so freeing now is stream-ordered.
  return emu::Free(e, dptr, {AllocKind::kAsync, AllocKind::kDevice});
}

}  // namespace

SLUICE_EMU_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  return AllocInContext(dptr, bytes, AllocKind::kDevice, nullptr, nullptr, false);
}

SLUICE_EMU_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                           size_t height, unsigned element_bytes) {
  if (pitch == nullptr || (element_bytes != 4 && element_bytes != 8 && element_bytes != 16)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t row = (width + 511) & ~size_t{511};
  if (CUresult r = AllocInContext(dptr, row * height, AllocKind::kDevice, nullptr, nullptr, false);
      r != CUDA_SUCCESS) {
    return r;
  }
  *pitch = row;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return AllocInContext(dptr, bytes, AllocKind::kManaged, nullptr, nullptr, false);
}

SLUICE_EMU_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  EMU_LOCKED(e);
  return emu::Free(e, dptr, {AllocKind::kDevice, AllocKind::kManaged, AllocKind::kAsync});
}

SLUICE_EMU_API CUresult cuMemAllocHost_v2(void** pp, size_t bytes) {
  if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr d;
  if (CUresult r = AllocInContext(&d, bytes, AllocKind::kHost, nullptr, nullptr, false);
      r != CUDA_SUCCESS) {
    return r;
  }
  *pp = reinterpret_cast<void*>(d);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned flags) {
  return cuMemAllocHost_v2(pp, bytes);
}

SLUICE_EMU_API CUresult cuMemFreeHost(void* p) {
  EMU_LOCKED(e);
  return emu::Free(e, reinterpret_cast<uintptr_t>(p), {AllocKind::kHost});
}

SLUICE_EMU_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  const int64_t total = e.device->memory_bytes();
  *total_bytes = static_cast<size_t>(total);
  *free_bytes = static_cast<size_t>(std::max<int64_t>(0, total - e.device->MemoryUsed()));
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  EMU_LOCKED(e);
  const emu::Allocation* a = emu::FindAllocation(e, p, 1);
  if (a == nullptr) return CUDA_ERROR_NOT_FOUND;
  auto it = --e.allocs.upper_bound(p);
  if (base != nullptr) *base = it->first;
  if (size != nullptr) *size = a->size;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  Emu* e = emu::Get();
  if (e == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocInContext(dptr, bytes, AllocKind::kAsync, &e->default_pool, s, false);
}
SLUICE_EMU_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream s) {
  Emu* e = emu::Get();
  if (e == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocInContext(dptr, bytes, AllocKind::kAsync, &e->default_pool, s, true);
}
SLUICE_EMU_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes,
                                                CUmemoryPool pool, CUstream s) {
  return AllocInContext(dptr, bytes, AllocKind::kAsync, pool, s, false);
}
SLUICE_EMU_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes,
                                                     CUmemoryPool pool, CUstream s) {
  return AllocInContext(dptr, bytes, AllocKind::kAsync, pool, s, true);
}
SLUICE_EMU_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  return FreeAsync(dptr, s, false);
}
SLUICE_EMU_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
  return FreeAsync(dptr, s, true);
}

SLUICE_EMU_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *pool = &e.default_pool;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  return cuDeviceGetDefaultMemPool(pool, dev);
}

SLUICE_EMU_API CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (pool == nullptr || props == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pool = new CUmemPoolHandle_st;
  e.pools.insert(*pool);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  EMU_LOCKED(e);
  if (!e.pools.erase(pool)) return CUDA_ERROR_INVALID_VALUE;
  // Like the driver, memory still allocated from the pool stays valid until freed.
  for (auto& [ptr, a] : e.allocs) {
    if (a.pool == pool) a.pool = nullptr;
  }
  delete pool;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t) {
  EMU_LOCKED(e);
  return pool == &e.default_pool || e.pools.contains(pool) ? CUDA_SUCCESS
                                                           : CUDA_ERROR_INVALID_VALUE;
}
