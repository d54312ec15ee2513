// Emulated driver API: memory copies and memsets. The bytes move at once (host memory stands for
// device memory, and kernel bodies ran at launch, so data order already holds); the stream is
// charged the transfer time (16 GB/s across "PCIe", 1 TB/s device to device, 1 us setup), and a
// synchronous call waits for it like the driver would.
#include <algorithm>
#include <cstring>

#include "intercept/emulated/emu_state.h"

namespace emu = sluice::intercept::emu;

namespace {

enum class Dir { kHtoD, kDtoH, kDtoD, kAny };

bool Valid(emu::Emu& e, Dir dir, uintptr_t dst, uintptr_t src, size_t n) {
  const bool dst_dev = dir == Dir::kHtoD || dir == Dir::kDtoD;
  const bool src_dev = dir == Dir::kDtoH || dir == Dir::kDtoD;
  if (dst_dev && emu::FindAllocation(e, dst, n) == nullptr) return false;
  if (src_dev && emu::FindAllocation(e, src, n) == nullptr) return false;
  return true;
}

int64_t TransferNs(Dir dir, size_t n) {
  const int64_t bytes = static_cast<int64_t>(n);
  return 1000 + (dir == Dir::kDtoD ? bytes / 1000 : bytes / 16);
}

// Charges `ns` of stream time on `stream` (after its queued work) and runs `move`. Waits for
// completion when `sync`. `ptsz`: a NULL stream means the per-thread stream.
template <typename Move>
CUresult OnStream(CUstream stream, bool ptsz, bool sync, Dir dir, uintptr_t dst, uintptr_t src,
                  size_t n, int64_t ns, Move move) {
  int64_t end;
  {
    EMU_LOCKED(e);
    CUctx_st* ctx;
    if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
    CUstream_st* s = emu::ResolveStream(e, ctx, stream, ptsz);
    if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (!Valid(e, dir, dst, src, n)) return CUDA_ERROR_INVALID_VALUE;
    end = std::max(sluice::intercept::MonoNowNs(), emu::StreamReady(e, s)) + ns;
    s->last_end_ns = end;
    move();
  }
  if (sync) sluice::intercept::SleepUntilNs(end);
  return CUDA_SUCCESS;
}

CUresult Copy(Dir dir, uintptr_t dst, uintptr_t src, size_t n, CUstream stream, bool ptsz,
              bool sync) {
  if (n == 0) return CUDA_SUCCESS;
  return OnStream(stream, ptsz, sync, dir, dst, src, n, TransferNs(dir, n), [=] {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  });
}

template <typename T>
CUresult Set(CUdeviceptr dst, T value, size_t count, CUstream stream, bool ptsz, bool sync) {
  if (count == 0) return CUDA_SUCCESS;
  const size_t n = count * sizeof(T);
  return OnStream(stream, ptsz, sync, Dir::kHtoD, dst, 0, n, TransferNs(Dir::kDtoD, n), [=] {
    T* p = reinterpret_cast<T*>(dst);
    std::fill(p, p + count, value);
  });
}

}  // namespace

#define EMU_COPY_SYNC(name, ptds, dir, Tdst, Tsrc)                                           \
  SLUICE_EMU_API CUresult name(Tdst dst, Tsrc src, size_t n) {                             \
    return Copy(dir, (uintptr_t)(dst), (uintptr_t)(src), n, nullptr, false, true);         \
  }                                                                                        \
  SLUICE_EMU_API CUresult ptds(Tdst dst, Tsrc src, size_t n) {                             \
    return Copy(dir, (uintptr_t)(dst), (uintptr_t)(src), n, nullptr, true, true);          \
  }
#define EMU_COPY_ASYNC(name, ptsz, dir, Tdst, Tsrc)                                          \
  SLUICE_EMU_API CUresult name(Tdst dst, Tsrc src, size_t n, CUstream s) {                 \
    return Copy(dir, (uintptr_t)(dst), (uintptr_t)(src), n, s, false, false);              \
  }                                                                                        \
  SLUICE_EMU_API CUresult ptsz(Tdst dst, Tsrc src, size_t n, CUstream s) {                 \
    return Copy(dir, (uintptr_t)(dst), (uintptr_t)(src), n, s, true, false);               \
  }

EMU_COPY_SYNC(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, Dir::kHtoD, CUdeviceptr, const void*)
EMU_COPY_SYNC(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, Dir::kDtoH, void*, CUdeviceptr)
EMU_COPY_SYNC(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, Dir::kDtoD, CUdeviceptr, CUdeviceptr)
EMU_COPY_SYNC(cuMemcpy, cuMemcpy_ptds, Dir::kAny, CUdeviceptr, CUdeviceptr)
EMU_COPY_ASYNC(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, Dir::kHtoD, CUdeviceptr,
               const void*)
EMU_COPY_ASYNC(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, Dir::kDtoH, void*, CUdeviceptr)
EMU_COPY_ASYNC(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, Dir::kDtoD, CUdeviceptr,
               CUdeviceptr)
EMU_COPY_ASYNC(cuMemcpyAsync, cuMemcpyAsync_ptsz, Dir::kAny, CUdeviceptr, CUdeviceptr)

#define EMU_SET(name, ptds, T)                                                             \
  SLUICE_EMU_API CUresult name(CUdeviceptr dst, T v, size_t n) {                           \
    return Set<T>(dst, v, n, nullptr, false, true);                                        \
  }                                                                                        \
  SLUICE_EMU_API CUresult ptds(CUdeviceptr dst, T v, size_t n) {                           \
    return Set<T>(dst, v, n, nullptr, true, true);                                         \
  }
#define EMU_SET_ASYNC(name, ptsz, T)                                                       \
  SLUICE_EMU_API CUresult name(CUdeviceptr dst, T v, size_t n, CUstream s) {               \
    return Set<T>(dst, v, n, s, false, false);                                             \
  }                                                                                        \
  SLUICE_EMU_API CUresult ptsz(CUdeviceptr dst, T v, size_t n, CUstream s) {               \
    return Set<T>(dst, v, n, s, true, false);                                              \
  }

EMU_SET(cuMemsetD8_v2, cuMemsetD8_v2_ptds, unsigned char)
EMU_SET(cuMemsetD16_v2, cuMemsetD16_v2_ptds, unsigned short)
EMU_SET(cuMemsetD32_v2, cuMemsetD32_v2_ptds, unsigned int)
EMU_SET_ASYNC(cuMemsetD8Async, cuMemsetD8Async_ptsz, unsigned char)
EMU_SET_ASYNC(cuMemsetD16Async, cuMemsetD16Async_ptsz, unsigned short)
EMU_SET_ASYNC(cuMemsetD32Async, cuMemsetD32Async_ptsz, unsigned int)
