// The table is a constant array built from hooks.def; lookups are linear scans over ~50 entries
// (cuGetProcAddress runs a few hundred times at runtime start-up, never on a launch path).
#include "intercept/hook_table.h"

#include <cstring>

#include "intercept/hooks.h"

namespace sluice::intercept {
namespace {

const HookEntry kHooks[] = {
#define SLUICE_HOOK(base, sym, ver, ptds, pfn) \
  {#base, ver, ptds != 0, #sym, kHook_##sym, reinterpret_cast<void*>(&SluiceHook_##sym)},
#define SLUICE_HOOK_ALIAS(base, sym, ver, ptds) \
  {#base, ver, ptds != 0, #sym, kHook_##sym, reinterpret_cast<void*>(&SluiceHook_##sym)},
#include "intercept/hooks.def"
#undef SLUICE_HOOK
#undef SLUICE_HOOK_ALIAS
};
constexpr size_t kHookEntries = sizeof(kHooks) / sizeof(kHooks[0]);

const HookEntry* Best(const char* base, int version, bool ptds) {
  const HookEntry* best = nullptr;
  for (const HookEntry& e : kHooks) {
    if (e.ptds != ptds || e.version > version || std::strcmp(e.base, base) != 0)
      continue;
    if (best == nullptr || e.version > best->version)
      best = &e;
  }
  return best;
}

}  // namespace

const HookEntry* HookTable(size_t* count) {
  *count = kHookEntries;
  return kHooks;
}

const HookEntry* FindHook(const char* base, int version, bool ptds) {
  if (base == nullptr)
    return nullptr;
  const HookEntry* e = Best(base, version, ptds);
  if (e == nullptr && ptds)
    e = Best(base, version, false);
  return e;
}

const HookEntry* FindHookBySymbol(const char* symbol) {
  if (symbol == nullptr)
    return nullptr;
  for (const HookEntry& e : kHooks) {
    if (std::strcmp(e.symbol, symbol) == 0)
      return &e;
  }
  return nullptr;
}

}  // namespace sluice::intercept
