// cuGetProcAddress / cuGetProcAddress_v2: the door through which the CUDA runtime (11.3+) gets
// every driver entry point. We ask the real driver first, so it decides which ABI the caller's
// version maps to; then, if the hook table has an entry for (name, version, stream flavour) and
// the driver's answer is exactly that entry's ABI (same pointer as asking for the entry's own
// version), we hand back our wrapper. A driver newer than our headers that maps the request to
// an ABI we do not know is passed through untouched. `symbolStatus` is always written.
#include "intercept/hook_table.h"
#include "intercept/hooks.h"
#include "intercept/log.h"
#include "intercept/real_driver.h"

namespace sluice::intercept {
namespace {

constexpr cuuint64_t kFlavourFlags =
    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

// Without a real cuGetProcAddress (a very old or minimal driver) only hooked names resolve.
CUresult TableOnly(const HookEntry* e, void** pfn, CUdriverProcAddressQueryResult* status) {
  if (e != nullptr && g_real[e->id] != nullptr) {
    *pfn = e->wrapper;
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
  }
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

CUresult Lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  CUdriverProcAddressQueryResult ignored;
  if (status == nullptr)
    status = &ignored;
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (pfn != nullptr)
    *pfn = nullptr;
  if (symbol == nullptr || pfn == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  EnsureLoaded();
  const bool ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const HookEntry* e = FindHook(symbol, version, ptds);
  if (!RealHasGetProcAddress())
    return TableOnly(e, pfn, status);
  void* p = nullptr;
  const CUresult r = RealGetProcAddress(symbol, &p, version, flags, status);
  if (r != CUDA_SUCCESS || p == nullptr || e == nullptr) {
    *pfn = p;
    return r;
  }
  void* expected = nullptr;
  CUdriverProcAddressQueryResult expected_status;
  const cuuint64_t entry_flags =
      (flags & ~kFlavourFlags) |
      (e->ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM);
  if (RealGetProcAddress(e->base, &expected, e->version, entry_flags, &expected_status) ==
          CUDA_SUCCESS &&
      expected == p) {
    *pfn = e->wrapper;
  } else {
    LogVerbose("%s (version %d, flags %llu): driver ABI differs from hooked %s; passing through",
               symbol, version, static_cast<unsigned long long>(flags), e->symbol);
    *pfn = p;
  }
  return r;
}

}  // namespace
}  // namespace sluice::intercept

extern "C" CUresult SluiceHook_cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                   cuuint64_t flags,
                                                   CUdriverProcAddressQueryResult* status) {
  return sluice::intercept::Lookup(symbol, pfn, version, flags, status);
}

extern "C" CUresult SluiceHook_cuGetProcAddress(const char* symbol, void** pfn, int version,
                                                cuuint64_t flags) {
  return sluice::intercept::Lookup(symbol, pfn, version, flags, nullptr);
}
