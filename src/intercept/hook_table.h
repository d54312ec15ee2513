// The hook table: every (base name, ABI version, per-thread-stream flag) key libsluice_cuda.so
// wraps, generated from hooks.def at compile time. Serves the cuGetProcAddress wrappers and the
// tests (which iterate it). Immutable; thread-safe.
#ifndef SLUICE_INTERCEPT_HOOK_TABLE_H_
#define SLUICE_INTERCEPT_HOOK_TABLE_H_

#include <cstddef>

namespace sluice::intercept {

struct HookEntry {
  const char* base;    // name passed to cuGetProcAddress
  int version;         // CUDA version that introduced this ABI
  bool ptds;           // per-thread-default-stream variant
  const char* symbol;  // exported symbol (ours and the driver's)
  int id;              // HookId of the wrapper
  void* wrapper;       // our exported function
};

// All entries, in hooks.def order.
const HookEntry* HookTable(size_t* count);

// The entry cuGetProcAddress(base, version, flags) should resolve to: among entries named
// `base` with the requested stream flavour, the one with the highest version <= `version`;
// a per-thread request falls back to the legacy entries when the name has no per-thread
// variant at or below `version`. nullptr when no entry matches (the caller passes through).
const HookEntry* FindHook(const char* base, int version, bool ptds);

// The entry exporting `symbol` (first one if aliased), or nullptr.
const HookEntry* FindHookBySymbol(const char* symbol);

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_HOOK_TABLE_H_
