// Pass-through stubs: every driver symbol libsluice_cuda.so exports without wrapping it (the
// list is generated from the CUDA headers at configure time). Each stub is a few instructions of
// assembly that tail-jump to the real driver's function, so any signature forwards unchanged;
// before the driver is loaded a stub calls the loader first (saving argument registers).
// Thread-safe: slots are written once by the loader (under pthread_once) and then only read.
#ifndef SLUICE_INTERCEPT_PASSTHROUGH_H_
#define SLUICE_INTERCEPT_PASSTHROUGH_H_

#include <cstddef>

namespace sluice::intercept {

// Resolves every stub's target in `driver` (dlopen handle); symbols the driver lacks answer
// CUDA_ERROR_NOT_FOUND. Called once by the loader.
void ResolvePassthrough(void* driver);

// The generated names, for tests and tools.
const char* const* PassthroughNames(size_t* count);

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_PASSTHROUGH_H_
