// Exported host-synchronisation wrappers: cuCtxSynchronize(_v2), cuStreamSynchronize(_ptsz),
// cuEventSynchronize and the synchronous cuMemcpyDtoH_v2(_ptds). Each successful call is one
// iteration boundary for the token server (protocol 1.1: the slot's sync_points, one relaxed add);
// unregistered processes and 1.0 servers get a plain pass-through. These calls never register
// with the server themselves (a process registers at its first launch or accounted allocation).
// Thread-safe: the registration is read through the gate's atomic pointer.
#include <atomic>
#include <cstdint>

#include "intercept/gate.h"
#include "intercept/hooks.h"

namespace sluice::intercept {
namespace {

// Counts one synchronisation point after a successful call, when registered at minor >= 1.1.
inline CUresult Counted(CUresult r) {
  if (r != CUDA_SUCCESS)
    return r;
  const Registration* reg = CurrentRegistration();
  if (reg != nullptr && reg->version_minor >= SLUICE_PROTO_MINOR_SYNC_POINTS) {
    std::atomic_ref<int64_t>(reg->slot->sync_points).fetch_add(1, std::memory_order_relaxed);
  }
  return r;
}

}  // namespace
}  // namespace sluice::intercept

using sluice::intercept::HookScope;
using sluice::intercept::InHook;

// Calls within another hook (the driver calling back, our own init) are not the application's.
#define SLUICE_SYNC_HOOK(sym, params, args)                              \
  extern "C" CUresult SluiceHook_##sym params {                          \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym); \
    if (InHook()) [[unlikely]]                                           \
      return real args;                                                  \
    HookScope scope;                                                     \
    return sluice::intercept::Counted(real args);                        \
  }
SLUICE_SYNC_HOOK(cuCtxSynchronize, (), ())
SLUICE_SYNC_HOOK(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))
SLUICE_SYNC_HOOK(cuStreamSynchronize, (CUstream s), (s))
SLUICE_SYNC_HOOK(cuStreamSynchronize_ptsz, (CUstream s), (s))
SLUICE_SYNC_HOOK(cuEventSynchronize, (CUevent e), (e))
SLUICE_SYNC_HOOK(cuMemcpyDtoH_v2, (void* dst, CUdeviceptr src, size_t bytes), (dst, src, bytes))
SLUICE_SYNC_HOOK(cuMemcpyDtoH_v2_ptds, (void* dst, CUdeviceptr src, size_t bytes),
                 (dst, src, bytes))
