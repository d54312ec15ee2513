// Internal to the fake driver's .cc files: the export macro and the shared state accessor.
// FAKE_API(symbol, (params)) { body } defines an exported C function whose assembler name is
// `symbol` (so cuda.h's renaming macros, e.g. cuMemAlloc -> cuMemAlloc_v2, do not apply).
#ifndef SLUICE_INTERCEPT_TESTING_FAKE_DRIVER_INTERNAL_H_
#define SLUICE_INTERCEPT_TESTING_FAKE_DRIVER_INTERNAL_H_

#include "intercept/testing/fake_driver.h"

// Inside another macro use FAKE_API_IDS(Fake_##sym, #sym, params) so `sym` is never expanded.
#define FAKE_API(sym, params) FAKE_API_IDS(Fake_##sym, #sym, params)
#define FAKE_API_IDS(fn, name, params)                                                \
  extern "C" __attribute__((visibility("default"))) CUresult fn params __asm__(name); \
  extern "C" CUresult fn params

namespace sluice::intercept::fake {
FakeState& State();
}  // namespace sluice::intercept::fake

#endif  // SLUICE_INTERCEPT_TESTING_FAKE_DRIVER_INTERNAL_H_
