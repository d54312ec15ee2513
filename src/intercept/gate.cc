// Slow paths of the launch gate: registration, waiting for refills, the fail policy, and
// re-registration after a server restart. See docs/intercept-protocol.md for the ordering rules
// (the seq_cst futex_word/waiters pair guarantees a waiter is either woken or never sleeps).
#include "intercept/gate.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include <linux/futex.h>

#include "intercept/hooks.h"
#include "intercept/log.h"
#include "intercept/mem_account.h"
#include "intercept/real_driver.h"

namespace sluice::intercept {
namespace internal {
std::atomic<Registration*> g_registration{nullptr};
std::atomic<int> g_mode{0};
std::atomic<int> g_active_captures{0};
}  // namespace internal

namespace {

using internal::g_mode;
using internal::g_registration;

constexpr int64_t kDefaultFailTimeoutNs = 100 * 1000 * 1000;
constexpr int64_t kDefaultPeriodNs = 5 * 1000 * 1000;
constexpr int64_t kMinWaitNs = 50 * 1000;

pthread_once_t g_gate_once = PTHREAD_ONCE_INIT;
pthread_mutex_t g_register_mu = PTHREAD_MUTEX_INITIALIZER;
std::atomic<int64_t> g_last_attempt_ns{0};
std::atomic<int64_t> g_self_period{-1};
std::atomic<bool> g_logged_failure{false};
char g_uuid[SLUICE_UUID_BYTES];  // written under g_register_mu

template <typename T>
std::atomic_ref<T> Ref(T& field) {
  return std::atomic_ref<T>(field);
}

void FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000),
              static_cast<long>(timeout_ns % 1000000000)};
  syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);  // shared: no PRIVATE flag
}

bool ResolveUuid(const Config& c) {
  if (c.gpu_uuid[0] != '\0') {
    std::memcpy(g_uuid, c.gpu_uuid, sizeof(g_uuid));
    return true;
  }
  using GetDevice = CUresult (*)(CUdevice*);
  using GetUuid = CUresult (*)(CUuuid*, CUdevice);
  auto get_device = reinterpret_cast<GetDevice>(RealSymbol("cuCtxGetDevice"));
  auto get_uuid = reinterpret_cast<GetUuid>(RealSymbol("cuDeviceGetUuid_v2"));
  if (get_uuid == nullptr)
    get_uuid = reinterpret_cast<GetUuid>(RealSymbol("cuDeviceGetUuid"));
  CUdevice device = 0;
  CUuuid uuid;
  if (get_device == nullptr || get_uuid == nullptr || get_device(&device) != CUDA_SUCCESS ||
      get_uuid(&uuid, device) != CUDA_SUCCESS) {
    return false;
  }
  FormatGpuUuid(reinterpret_cast<const unsigned char*>(uuid.bytes), g_uuid);
  return true;
}

// Registers (or re-registers, closing `old`'s socket and asking for its slot back). Caller holds
// g_register_mu. Publishes and returns the new record, or nullptr.
Registration* RegisterLocked(Registration* old) {
  const Config& c = LoadedConfig();
  if (g_uuid[0] == '\0' && !ResolveUuid(c)) {
    if (!g_logged_failure.exchange(true)) {
      LogAlways("cannot tell which GPU to register for: set SLUICE_GPU_UUID");
    }
    return nullptr;
  }
  RegisterRequest req{c.token_socket, g_uuid, c.instance_id, -1, FailTimeoutNs()};
  if (old != nullptr) {
    close(old->socket_fd);  // lets a live-but-stalled server retire the old slot
    req.requested_slot = static_cast<int32_t>(old->slot_index);
  }
  Registration tmp;
  char error[256];
  if (!Register(req, &tmp, error, sizeof(error))) {
    if (!g_logged_failure.exchange(true)) {
      LogAlways("token server registration failed (%s); fail policy %s", error,
                FailPolicy() == SLUICE_FAIL_CLOSED ? "closed" : "open");
    } else {
      LogVerbose("token server registration failed: %s", error);
    }
    return nullptr;
  }
  auto* reg = static_cast<Registration*>(std::malloc(sizeof(Registration)));
  if (reg == nullptr)
    return nullptr;
  new (reg) Registration(tmp);
  MirrorMemoryTo(reg);
  g_registration.store(reg, std::memory_order_release);
  g_logged_failure.store(false);
  LogVerbose("registered with %s for %s: slot %u generation %u", c.token_socket, g_uuid,
             reg->slot_index, reg->generation);
  return reg;
}

// Rate-limited retry: one thread, at most once per fail timeout.
Registration* MaybeRegister(Registration* old, int64_t now) {
  int64_t last = g_last_attempt_ns.load(std::memory_order_relaxed);
  if (now - last < FailTimeoutNs() ||
      !g_last_attempt_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return nullptr;
  }
  if (pthread_mutex_trylock(&g_register_mu) != 0)
    return nullptr;
  Registration* current = g_registration.load(std::memory_order_acquire);
  Registration* fresh = current != old ? current : RegisterLocked(old);
  pthread_mutex_unlock(&g_register_mu);
  return fresh;
}

void InitGate() {
  const Config& c = LoadedConfig();
  if (c.token_socket[0] == '\0') {
    g_mode.store(static_cast<int>(GateMode::kUngated), std::memory_order_release);
    return;
  }
  pthread_mutex_lock(&g_register_mu);
  g_last_attempt_ns.store(MonotonicNowNs(), std::memory_order_relaxed);
  Registration* reg = RegisterLocked(nullptr);
  pthread_mutex_unlock(&g_register_mu);
  g_mode.store(static_cast<int>(reg != nullptr ? GateMode::kGated : GateMode::kNoServer),
               std::memory_order_release);
}

bool TryTake(Registration* reg, int64_t cost) {
  auto budget = Ref(reg->slot->budget);
  if (budget.fetch_sub(cost, std::memory_order_relaxed) > 0)
    return true;
  budget.fetch_add(cost, std::memory_order_relaxed);
  return false;
}

bool ServerGone(const Registration* reg, int64_t now) {
  const int64_t beat = Ref(reg->header->heartbeat_ns).load(std::memory_order_acquire);
  if (now - beat > FailTimeoutNs())
    return true;
  return Ref(reg->slot->state).load(std::memory_order_acquire) != SLUICE_SLOT_ACTIVE ||
         Ref(reg->slot->generation).load(std::memory_order_acquire) != reg->generation;
}

int64_t PeriodNs(const Registration* reg) {
  const int64_t p = Ref(reg->header->period_ns).load(std::memory_order_relaxed);
  return p > 0 ? p : kDefaultPeriodNs;
}

// A ppm field of the slot in (0, 1e6]; 0 or out of range (a field an older server never
// wrote) reads as 1e6.
int64_t PpmOr1(uint32_t& field) {
  const int64_t ppm = Ref(field).load(std::memory_order_relaxed);
  return ppm <= 0 || ppm > 1000000 ? 1000000 : ppm;
}

// Fail-open metering: once per local period, refill our own budget to limit * time quota *
// max_tokens (the time quota spread evenly over the window, protocol 1.2) with the server's rule
// (debt carries, surplus does not). Both fields are read at every local period, so a live change
// applies from the next one. False when the segment gives nothing to meter.
bool SelfRefill(Registration* reg, int64_t now) {
  const int64_t max_tokens = Ref(reg->header->max_tokens).load(std::memory_order_relaxed);
  if (max_tokens <= 0)
    return false;
  int64_t tokens = max_tokens * PpmOr1(reg->slot->limit_ppm) / 1000000;
  tokens = tokens * PpmOr1(reg->slot->time_quota_ppm) / 1000000;
  if (tokens < 1)
    tokens = 1;
  const int64_t k = now / PeriodNs(reg);
  int64_t last = g_self_period.load(std::memory_order_relaxed);
  if (k > last && g_self_period.compare_exchange_strong(last, k, std::memory_order_relaxed)) {
    auto budget = Ref(reg->slot->budget);
    int64_t old = budget.load(std::memory_order_relaxed);
    while (!budget.compare_exchange_weak(old, tokens + (old < 0 ? old : 0),
                                         std::memory_order_relaxed)) {
    }
  }
  return true;
}

}  // namespace

namespace internal {

void InitGateSlow() {
  EnsureLoaded();
  pthread_once(&g_gate_once, &InitGate);
}

CUresult AdmitSlow(Registration* reg, int64_t cost, Registration** reg_out) {
  for (;;) {
    uint32_t* word = &reg->slot->futex_word;
    const uint32_t seen = Ref(*word).load(std::memory_order_seq_cst);
    if (TryTake(reg, cost))
      break;
    const int64_t now = MonotonicNowNs();
    if (ServerGone(reg, now)) {
      if (Registration* fresh = MaybeRegister(reg, now)) {
        reg = fresh;
        continue;
      }
      if (FailPolicy() == SLUICE_FAIL_CLOSED)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
      if (!SelfRefill(reg, now))
        return CUDA_SUCCESS;  // nothing to meter with: run uncharged
      if (TryTake(reg, cost))
        break;
      const int64_t period = PeriodNs(reg);
      FutexWait(word, seen, period - now % period + 1);
      continue;
    }
    const int64_t beat = Ref(reg->header->heartbeat_ns).load(std::memory_order_acquire);
    int64_t wait = beat + FailTimeoutNs() - now;
    if (wait > PeriodNs(reg))
      wait = PeriodNs(reg);
    if (wait < kMinWaitNs)
      wait = kMinWaitNs;
    Ref(reg->slot->waiters).fetch_add(1, std::memory_order_seq_cst);
    FutexWait(word, seen, wait);
    Ref(reg->slot->waiters).fetch_sub(1, std::memory_order_seq_cst);
  }
  *reg_out = reg;
  return CUDA_SUCCESS;
}

CUresult AdmitUnregistered(int64_t cost, Registration** reg_out) {
  if (Registration* reg = MaybeRegister(nullptr, MonotonicNowNs())) {
    g_mode.store(static_cast<int>(GateMode::kGated), std::memory_order_release);
    if (TryTake(reg, cost)) {
      *reg_out = reg;
      return CUDA_SUCCESS;
    }
    return AdmitSlow(reg, cost, reg_out);
  }
  return FailPolicy() == SLUICE_FAIL_CLOSED ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES : CUDA_SUCCESS;
}

}  // namespace internal

void CaptureBegan() {
  internal::g_active_captures.fetch_add(1, std::memory_order_relaxed);
}

void CaptureEnded() {
  int n = internal::g_active_captures.load(std::memory_order_relaxed);
  while (n > 0 && !internal::g_active_captures.compare_exchange_weak(n, n - 1)) {
  }
}

int FailPolicy() {
  const Config& c = LoadedConfig();
  if (c.fail_policy >= 0)
    return c.fail_policy;
  const Registration* reg = CurrentRegistration();
  if (reg != nullptr && reg->header->fail_policy == SLUICE_FAIL_CLOSED)
    return SLUICE_FAIL_CLOSED;
  return SLUICE_FAIL_OPEN;
}

int64_t FailTimeoutNs() {
  const Config& c = LoadedConfig();
  if (c.fail_timeout_ns > 0)
    return c.fail_timeout_ns;
  const Registration* reg = CurrentRegistration();
  if (reg != nullptr && reg->header->fail_timeout_ns > 0)
    return reg->header->fail_timeout_ns;
  return kDefaultFailTimeoutNs;
}

}  // namespace sluice::intercept
