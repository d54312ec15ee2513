// Declarations generated from hooks.def for libsluice_cuda.so: one exported wrapper per hooked
// symbol (C++ name SluiceHook_<symbol>, assembler name <symbol>), its ABI type SluicePfn_<symbol>,
// its HookId, and the real driver's entry points (filled once by the loader, then read-only).
// Included by the hook implementation files and by hook_table.cc. Thread-safe after loading.
#ifndef SLUICE_INTERCEPT_HOOKS_H_
#define SLUICE_INTERCEPT_HOOKS_H_

#include <cuda.h>
#include <cudaTypedefs.h>

#include <type_traits>

// ABIs cudaTypedefs.h only declares for the driver's own build (__CUDA_API_VERSION_INTERNAL).
typedef CUresult(CUDAAPI* SluicePfnGraphInstantiateV1)(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                       CUgraphNode* phErrorNode, char* logBuffer,
                                                       size_t bufferSize);
typedef CUresult(CUDAAPI* SluicePfnStreamBeginCaptureV1)(CUstream hStream);

#define SLUICE_HOOK(base, sym, ver, ptds, pfn)                                 \
  using SluicePfn_##sym = pfn;                                                 \
  extern "C" __attribute__((visibility("default"))) std::remove_pointer_t<pfn> \
      SluiceHook_##sym __asm__(#sym);
#define SLUICE_HOOK_ALIAS(base, sym, ver, ptds)
#include "intercept/hooks.def"
#undef SLUICE_HOOK
#undef SLUICE_HOOK_ALIAS

namespace sluice::intercept {

// One id per exported wrapper (aliases share their symbol's id).
enum HookId : int {
#define SLUICE_HOOK(base, sym, ver, ptds, pfn) kHook_##sym,
#define SLUICE_HOOK_ALIAS(base, sym, ver, ptds)
#include "intercept/hooks.def"
#undef SLUICE_HOOK
#undef SLUICE_HOOK_ALIAS
  kHookCount
};

// Real driver entry points by HookId; nullptr when the driver lacks the symbol. Written by the
// loader before it publishes "loaded" (release); read-only afterwards.
extern void* g_real[kHookCount];

// Loads the real driver on first use (pthread_once); cheap afterwards. Safe to call anywhere.
void EnsureLoaded();
// What a wrapper returns when its real entry point is missing: CUDA_ERROR_NOT_INITIALIZED if no
// driver could be loaded, CUDA_ERROR_NOT_FOUND if the driver lacks the symbol.
CUresult MissingReal(const char* symbol);

// Thread-local reentrancy guard: a hook entered while another hook runs on the same thread
// (the driver calling back into an exported symbol, or our own init) goes straight to the driver.
extern thread_local int t_hook_depth __attribute__((tls_model("initial-exec")));
class HookScope {
 public:
  HookScope() { ++t_hook_depth; }
  ~HookScope() { --t_hook_depth; }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;
};
inline bool InHook() {
  return t_hook_depth != 0;
}

}  // namespace sluice::intercept

// `auto var = real entry of sym`, returning MissingReal() from the enclosing wrapper if absent.
// Inside another macro use SLUICE_REAL_OR_RETURN_IDS with pasted tokens, so that cuda.h's renaming
// macros (cuStreamBeginCapture -> cuStreamBeginCapture_v2, ...) never apply to `sym`.
#define SLUICE_REAL_OR_RETURN(var, sym) \
  SLUICE_REAL_OR_RETURN_IDS(var, SluicePfn_##sym, kHook_##sym, #sym)
#define SLUICE_REAL_OR_RETURN_IDS(var, pfn, id, name)                                           \
  ::sluice::intercept::EnsureLoaded();                                                          \
  const auto var = reinterpret_cast<pfn>(::sluice::intercept::g_real[::sluice::intercept::id]); \
  if (var == nullptr)                                                                           \
  return ::sluice::intercept::MissingReal(name)

#endif  // SLUICE_INTERCEPT_HOOKS_H_
