// Exported memory wrappers: reserve against the limit before the driver call (so concurrent
// allocations can never overshoot it), record the allocation on success, and charge a free to
// the allocation's own record. Allocations we never saw pass through uncharged.
// Not charged (documented in docs/intercept-protocol.md): context and module memory, graph
// memory nodes, memory pools' cached-but-free bytes, imported IPC memory, v1 (32-bit) entries.
#include <cstdint>
#include <type_traits>

#include "intercept/hooks.h"
#include "intercept/mem_account.h"

namespace sluice::intercept {
namespace {

constexpr uint64_t kMaxAccountable = uint64_t{1} << 62;

// Runs `alloc` (returns CUresult, fills *ptr) with `bytes` reserved beforehand.
template <typename Alloc>
CUresult Accounted(AllocKind kind, size_t bytes, const unsigned long long* key, Alloc&& alloc) {
  if (bytes > kMaxAccountable) {
    return MemLimitBytes() > 0 ? CUDA_ERROR_OUT_OF_MEMORY : alloc();
  }
  const int64_t n = static_cast<int64_t>(bytes);
  if (!ReserveMemory(n))
    return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult r = alloc();
  if (r != CUDA_SUCCESS) {
    ReleaseMemory(n);
    return r;
  }
  RecordAllocation(kind, *key, n);
  return r;
}

// Frees through `free_fn` after taking the record; restores the record if the driver refuses
// (the address stays valid then, so no other allocation can have reused it).
template <typename Free>
CUresult Released(AllocKind kind, uint64_t key, Free&& free_fn) {
  int64_t bytes = 0;
  const bool known = TakeAllocation(kind, key, &bytes);
  const CUresult r = free_fn();
  if (!known)
    return r;
  if (r == CUDA_SUCCESS) {
    ReleaseMemory(bytes);
  } else {
    RecordAllocation(kind, key, bytes);
  }
  return r;
}

static_assert(std::is_same_v<CUdeviceptr, unsigned long long>, "device pointers are 64-bit");
static_assert(std::is_same_v<CUmemGenericAllocationHandle, unsigned long long>, "64-bit handles");

}  // namespace
}  // namespace sluice::intercept

using sluice::intercept::AllocKind;
using sluice::intercept::HookScope;
using sluice::intercept::InHook;

extern "C" CUresult SluiceHook_cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  SLUICE_REAL_OR_RETURN(real, cuMemAlloc_v2);
  if (InHook())
    return real(dptr, bytesize);
  HookScope scope;
  return sluice::intercept::Accounted(AllocKind::kPointer, bytesize, dptr,
                                      [&] { return real(dptr, bytesize); });
}

extern "C" CUresult SluiceHook_cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                                 unsigned int flags) {
  SLUICE_REAL_OR_RETURN(real, cuMemAllocManaged);
  if (InHook())
    return real(dptr, bytesize, flags);
  HookScope scope;
  return sluice::intercept::Accounted(AllocKind::kPointer, bytesize, dptr,
                                      [&] { return real(dptr, bytesize, flags); });
}

#define SLUICE_ALLOC_ASYNC(sym)                                                          \
  extern "C" CUresult SluiceHook_##sym(CUdeviceptr* dptr, size_t bytesize, CUstream s) { \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);                 \
    if (InHook())                                                                        \
      return real(dptr, bytesize, s);                                                    \
    HookScope scope;                                                                     \
    return sluice::intercept::Accounted(AllocKind::kPointer, bytesize, dptr,             \
                                        [&] { return real(dptr, bytesize, s); });        \
  }
SLUICE_ALLOC_ASYNC(cuMemAllocAsync)
SLUICE_ALLOC_ASYNC(cuMemAllocAsync_ptsz)

#define SLUICE_ALLOC_FROM_POOL(sym)                                                        \
  extern "C" CUresult SluiceHook_##sym(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool p, \
                                       CUstream s) {                                       \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);                   \
    if (InHook())                                                                          \
      return real(dptr, bytesize, p, s);                                                   \
    HookScope scope;                                                                       \
    return sluice::intercept::Accounted(AllocKind::kPointer, bytesize, dptr,               \
                                        [&] { return real(dptr, bytesize, p, s); });       \
  }
SLUICE_ALLOC_FROM_POOL(cuMemAllocFromPoolAsync)
SLUICE_ALLOC_FROM_POOL(cuMemAllocFromPoolAsync_ptsz)

// The pitch is known only after the call: reserve width*height first, then the padding.
extern "C" CUresult SluiceHook_cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                                  size_t height, unsigned int element_bytes) {
  SLUICE_REAL_OR_RETURN(real, cuMemAllocPitch_v2);
  if (InHook())
    return real(dptr, pitch, width, height, element_bytes);
  HookScope scope;
  namespace si = sluice::intercept;
  if (height != 0 && width > si::kMaxAccountable / height) {
    return si::MemLimitBytes() > 0 ? CUDA_ERROR_OUT_OF_MEMORY
                                   : real(dptr, pitch, width, height, element_bytes);
  }
  const int64_t base = static_cast<int64_t>(width * height);
  if (!si::ReserveMemory(base))
    return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult r = real(dptr, pitch, width, height, element_bytes);
  if (r != CUDA_SUCCESS) {
    si::ReleaseMemory(base);
    return r;
  }
  const int64_t padding = static_cast<int64_t>(*pitch * height) - base;
  if (padding > 0 && !si::ReserveMemory(padding)) {
    SLUICE_REAL_OR_RETURN(free_real, cuMemFree_v2);
    free_real(*dptr);
    si::ReleaseMemory(base);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  si::RecordAllocation(AllocKind::kPointer, *dptr, base + (padding > 0 ? padding : 0));
  return r;
}

extern "C" CUresult SluiceHook_cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                           const CUmemAllocationProp* prop,
                                           unsigned long long flags) {
  SLUICE_REAL_OR_RETURN(real, cuMemCreate);
  if (InHook())
    return real(handle, size, prop, flags);
  HookScope scope;
  return sluice::intercept::Accounted(AllocKind::kHandle, size, handle,
                                      [&] { return real(handle, size, prop, flags); });
}

extern "C" CUresult SluiceHook_cuMemFree_v2(CUdeviceptr dptr) {
  SLUICE_REAL_OR_RETURN(real, cuMemFree_v2);
  if (InHook())
    return real(dptr);
  HookScope scope;
  return sluice::intercept::Released(AllocKind::kPointer, dptr, [&] { return real(dptr); });
}

#define SLUICE_FREE_ASYNC(sym)                                                                    \
  extern "C" CUresult SluiceHook_##sym(CUdeviceptr dptr, CUstream s) {                            \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);                          \
    if (InHook())                                                                                 \
      return real(dptr, s);                                                                       \
    HookScope scope;                                                                              \
    return sluice::intercept::Released(AllocKind::kPointer, dptr, [&] { return real(dptr, s); }); \
  }
SLUICE_FREE_ASYNC(cuMemFreeAsync)
SLUICE_FREE_ASYNC(cuMemFreeAsync_ptsz)

extern "C" CUresult SluiceHook_cuMemRelease(CUmemGenericAllocationHandle handle) {
  SLUICE_REAL_OR_RETURN(real, cuMemRelease);
  if (InHook())
    return real(handle);
  HookScope scope;
  return sluice::intercept::Released(AllocKind::kHandle, handle, [&] { return real(handle); });
}

// Reports the limit as the total and what is left of it as free (never more than the device
// really has free).
extern "C" CUresult SluiceHook_cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  SLUICE_REAL_OR_RETURN(real, cuMemGetInfo_v2);
  const CUresult r = real(free_bytes, total_bytes);
  if (InHook() || r != CUDA_SUCCESS || free_bytes == nullptr || total_bytes == nullptr)
    return r;
  HookScope scope;
  const int64_t limit = sluice::intercept::MemLimitBytes();
  if (limit <= 0)
    return r;
  const int64_t used = sluice::intercept::MemUsedBytes();
  const size_t left = used >= limit ? 0 : static_cast<size_t>(limit - used);
  if (static_cast<size_t>(limit) < *total_bytes)
    *total_bytes = static_cast<size_t>(limit);
  if (left < *free_bytes)
    *free_bytes = left;
  return r;
}
