// The launch gate of libsluice_cuda.so: each gated launch takes gridX*gridY*gridZ tokens from the
// instance's budget in the GPU's shared segment (protocol.h). Fast path: one relaxed fetch_sub,
// no syscall, lock or driver call; an exhausted budget waits on the slot's futex until the token
// server refills it, or follows the fail policy when the server is gone (never forever).
// Thread-safe: the registration is an immutable record published through an atomic pointer.
#ifndef SLUICE_INTERCEPT_GATE_H_
#define SLUICE_INTERCEPT_GATE_H_

#include <cuda.h>

#include <atomic>
#include <cstdint>

#include "intercept/protocol.h"
#include "intercept/token_client.h"

namespace sluice::intercept {

// Gate modes, decided at the first gated call and revisited only on slow paths:
//   kUngated   no SLUICE_TOKEN_SOCKET: launches pass straight through
//   kGated     registered: launches take tokens
//   kNoServer  a socket is configured but registration failed: fail-open launches pass, fail-closed
//              ones are refused; registration is retried at most once per fail timeout
// kNoServer -> kGated on a successful retry; kGated never leaves (a dead server is handled by
// the slow path with the same record, or a fresh one after re-registration).
enum class GateMode : int { kUninit = 0, kUngated, kGated, kNoServer };

namespace internal {
extern std::atomic<Registration*> g_registration;
extern std::atomic<int> g_mode;
extern std::atomic<int> g_active_captures;
void InitGateSlow();
// After a failed fast-path take (already returned): takes `cost` tokens from `reg`, waiting for
// refills or applying the fail policy; may switch to a fresh registration.
CUresult AdmitSlow(Registration* reg, int64_t cost, Registration** reg_out);
// No registration although a server is configured (kNoServer).
CUresult AdmitUnregistered(int64_t cost, Registration** reg_out);
}  // namespace internal

// Registers with the token server on first use (no-op afterwards).
inline void EnsureGate() {
  if (internal::g_mode.load(std::memory_order_acquire) == 0) [[unlikely]] {
    internal::InitGateSlow();
  }
}

// The current registration, or nullptr when ungated. Valid forever once returned.
inline Registration* CurrentRegistration() {
  return internal::g_registration.load(std::memory_order_acquire);
}

// Takes `cost` tokens, waiting (bounded) when the budget is exhausted. Returns CUDA_SUCCESS to
// launch, or CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES when the fail-closed policy refuses the launch.
// `*reg_out` receives the registration charged (nullptr: nothing charged); pass it, the cost and
// the launch's result to FinishLaunch.
inline CUresult AdmitLaunch(int64_t cost, Registration** reg_out) {
  EnsureGate();
  *reg_out = nullptr;
  if (cost <= 0)
    return CUDA_SUCCESS;
  Registration* reg = CurrentRegistration();
  if (reg == nullptr) [[unlikely]] {
    if (internal::g_mode.load(std::memory_order_relaxed) == static_cast<int>(GateMode::kUngated)) {
      return CUDA_SUCCESS;
    }
    return internal::AdmitUnregistered(cost, reg_out);
  }
  const int64_t old =
      std::atomic_ref<int64_t>(reg->slot->budget).fetch_sub(cost, std::memory_order_relaxed);
  if (old > 0) [[likely]] {
    *reg_out = reg;
    return CUDA_SUCCESS;
  }
  std::atomic_ref<int64_t>(reg->slot->budget).fetch_add(cost, std::memory_order_relaxed);
  return internal::AdmitSlow(reg, cost, reg_out);
}

// Completes a launch admitted by AdmitLaunch: counts it on success, refunds the tokens on failure.
inline void FinishLaunch(Registration* reg, int64_t cost, CUresult result) {
  if (reg == nullptr || cost <= 0)
    return;
  SluiceSlot* s = reg->slot;
  if (result == CUDA_SUCCESS) [[likely]] {
    std::atomic_ref<int64_t>(s->blocks_total).fetch_add(cost, std::memory_order_relaxed);
    std::atomic_ref<int64_t>(s->kernels_total).fetch_add(1, std::memory_order_relaxed);
  } else {
    std::atomic_ref<int64_t>(s->budget).fetch_add(cost, std::memory_order_relaxed);
  }
}

// Stream capture bookkeeping (launch_hooks.cc): while any capture is active, launches ask the
// driver whether their stream is capturing; otherwise they never do.
inline bool AnyCaptureActive() {
  return internal::g_active_captures.load(std::memory_order_relaxed) > 0;
}
void CaptureBegan();
void CaptureEnded();

// Effective fail policy / timeout (config, else segment, else open / 100 ms).
int FailPolicy();
int64_t FailTimeoutNs();

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_GATE_H_
