// The real CUDA driver behind libsluice_cuda.so: found and opened once (lazily, on the first
// hooked or passed-through call), verified not to be this library, and its entry points resolved
// into g_real (hooks.h) and the pass-through slots. Thread-safe: loading runs under pthread_once;
// everything published here is read-only afterwards.
#ifndef SLUICE_INTERCEPT_REAL_DRIVER_H_
#define SLUICE_INTERCEPT_REAL_DRIVER_H_

#include <cuda.h>

#include "intercept/config.h"

namespace sluice::intercept {

// Settings parsed at load time (valid after EnsureLoaded()).
const Config& LoadedConfig();

// Handle of the real driver (dlopen), or nullptr when none was found.
void* RealDriverHandle();
// Path the real driver was opened from ("" when none).
const char* RealDriverPath();

// True when `handle` (from dlopen) is this library itself: a libcuda.so.1 found by name can be
// us, since we may be loaded under that SONAME.
bool IsSelf(void* handle);

// dlsym in the real driver; nullptr when absent or no driver.
void* RealSymbol(const char* name);

// The real driver's cuGetProcAddress, with the v2 (status) signature whatever the driver has:
// uses cuGetProcAddress_v2 when exported, else the v1 entry (status derived from the result).
// Returns CUDA_ERROR_NOT_FOUND with status SYMBOL_NOT_FOUND when the driver has neither.
CUresult RealGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                            CUdriverProcAddressQueryResult* status);
// True when the real driver exports a cuGetProcAddress of either version.
bool RealHasGetProcAddress();

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_REAL_DRIVER_H_
