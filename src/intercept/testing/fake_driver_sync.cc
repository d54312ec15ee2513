// Fake driver, part 3: host synchronisation (context, stream, event) and device-to-host copies,
// synchronous and asynchronous. Nothing runs asynchronously here, so each only records that it
// was called (FakeState::syncs / last_sync); copies fill the destination with a marker byte.
#include <cstring>

#include "intercept/testing/fake_driver_internal.h"

namespace fk = sluice::intercept::fake;

namespace sluice::intercept::fake {
namespace {

CUresult Sync(const char* entry) {
  FakeState& st = State();
  int pending = st.fail_next_sync.load();
  if (pending > 0 && st.fail_next_sync.compare_exchange_strong(pending, 0))
    return CUDA_ERROR_INVALID_VALUE;
  st.syncs.fetch_add(1);
  st.last_sync.store(entry);
  return CUDA_SUCCESS;
}

CUresult Copy(const char* entry, void* dst, CUdeviceptr src, size_t bytes) {
  if (dst == nullptr || src == 0)
    return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = Sync(entry);
  if (r == CUDA_SUCCESS)
    std::memset(dst, 0x5a, bytes);
  return r;
}

}  // namespace
}  // namespace sluice::intercept::fake

FAKE_API(cuCtxSynchronize, ()) {
  return fk::Sync("cuCtxSynchronize");
}
FAKE_API(cuCtxSynchronize_v2, (CUcontext)) {
  return fk::Sync("cuCtxSynchronize_v2");
}
FAKE_API(cuStreamSynchronize, (CUstream)) {
  return fk::Sync("cuStreamSynchronize");
}
FAKE_API(cuStreamSynchronize_ptsz, (CUstream)) {
  return fk::Sync("cuStreamSynchronize_ptsz");
}
FAKE_API(cuEventSynchronize, (CUevent)) {
  return fk::Sync("cuEventSynchronize");
}
FAKE_API(cuMemcpyDtoH_v2, (void* dst, CUdeviceptr src, size_t bytes)) {
  return fk::Copy("cuMemcpyDtoH_v2", dst, src, bytes);
}
FAKE_API(cuMemcpyDtoH_v2_ptds, (void* dst, CUdeviceptr src, size_t bytes)) {
  return fk::Copy("cuMemcpyDtoH_v2_ptds", dst, src, bytes);
}
FAKE_API(cuMemcpyDtoHAsync_v2, (void* dst, CUdeviceptr src, size_t bytes, CUstream)) {
  return fk::Copy("cuMemcpyDtoHAsync_v2", dst, src, bytes);
}
FAKE_API(cuMemcpyDtoHAsync_v2_ptsz, (void* dst, CUdeviceptr src, size_t bytes, CUstream)) {
  return fk::Copy("cuMemcpyDtoHAsync_v2_ptsz", dst, src, bytes);
}
