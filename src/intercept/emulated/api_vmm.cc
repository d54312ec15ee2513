// Emulated driver API: the virtual-memory calls (cuMemCreate / Release, AddressReserve / Free,
// Map / Unmap, SetAccess, GetAllocationGranularity). A physical allocation is a memfd charged to
// the device capacity; a reservation is PROT_NONE address space; cuMemMap maps the memfd over
// it (MAP_FIXED) and cuMemSetAccess makes it read-write. The physical memory (and its charge)
// goes when it has been released and its last mapping unmapped, as with the driver.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "intercept/emulated/emu_state.h"

namespace emu = sluice::intercept::emu;

namespace {

constexpr size_t kGranularity = size_t{2} << 20;

bool Aligned(size_t v) { return v % kGranularity == 0; }

void MaybeFree(emu::Emu& e, CUmemGenericAllocationHandle h) {
  auto it = e.vmm_handles.find(h);
  if (it == e.vmm_handles.end() || !it->second.released || it->second.mappings > 0) return;
  close(it->second.fd);
  e.device->ReleaseMemory(static_cast<int64_t>(it->second.size));
  e.vmm_handles.erase(it);
}

// True when [ptr, ptr + size) lies inside one reservation.
bool Reserved(emu::Emu& e, uintptr_t ptr, size_t size) {
  auto it = e.reservations.upper_bound(ptr);
  if (it == e.reservations.begin()) return false;
  --it;
  return ptr + size <= it->first + it->second;
}

}  // namespace

SLUICE_EMU_API CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                      const CUmemAllocationProp* prop,
                                                      CUmemAllocationGranularity_flags) {
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                    const CUmemAllocationProp* prop, unsigned long long flags) {
  if (handle == nullptr || prop == nullptr || size == 0 || !Aligned(size) || flags != 0 ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  EMU_LOCKED(e);
  if (!e.device->ChargeMemory(static_cast<int64_t>(size))) return CUDA_ERROR_OUT_OF_MEMORY;
  const int fd = memfd_create("sluice-emu-vmm", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    e.device->ReleaseMemory(static_cast<int64_t>(size));
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *handle = e.next_vmm_handle++;
  e.vmm_handles[*handle] = emu::VmmHandle{fd, size, 0, false};
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  EMU_LOCKED(e);
  auto it = e.vmm_handles.find(handle);
  if (it == e.vmm_handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;
  MaybeFree(e, handle);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                            CUdeviceptr addr, unsigned long long flags) {
  if (ptr == nullptr || size == 0 || !Aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  // Over-reserve so the start can be aligned; the slack is returned at once.
  const size_t align = std::max(alignment, kGranularity);
  void* p = mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (raw + align - 1) / align * align;
  if (start > raw) munmap(p, start - raw);
  if (raw + align > start) munmap(reinterpret_cast<void*>(start + size), raw + align - start);
  e.reservations[start] = size;
  *ptr = start;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  EMU_LOCKED(e);
  auto it = e.reservations.find(ptr);
  if (it == e.reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = e.vmm_mappings.lower_bound(ptr);
  if (m != e.vmm_mappings.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), size);
  e.reservations.erase(it);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                 CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (size == 0 || !Aligned(size) || !Aligned(offset) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  auto h = e.vmm_handles.find(handle);
  if (h == e.vmm_handles.end() || h->second.released || offset + size > h->second.size ||
      !Reserved(e, ptr, size) || emu::FindAllocation(e, ptr, 1) != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED,
                 h->second.fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  ++h->second.mappings;
  e.vmm_mappings[ptr] = handle;
  e.allocs[ptr] = emu::Allocation{size, emu::AllocKind::kVmm, nullptr, nullptr, false};
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                       size_t count) {
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  const emu::Allocation* a = emu::FindAllocation(e, ptr, size);
  if (a == nullptr || a->kind != emu::AllocKind::kVmm) return CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) prot |= PROT_READ;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot |= PROT_READ | PROT_WRITE;
  }
  return mprotect(reinterpret_cast<void*>(ptr), size, prot) == 0 ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_INVALID_VALUE;
}

SLUICE_EMU_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  EMU_LOCKED(e);
  auto m = e.vmm_mappings.find(ptr);
  auto a = e.allocs.find(ptr);
  if (m == e.vmm_mappings.end() || a == e.allocs.end() || a->second.size != size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Put the reservation back in place of the mapping.
  mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  const CUmemGenericAllocationHandle handle = m->second;
  e.vmm_mappings.erase(m);
  e.allocs.erase(a);
  --e.vmm_handles[handle].mappings;
  MaybeFree(e, handle);
  return CUDA_SUCCESS;
}
