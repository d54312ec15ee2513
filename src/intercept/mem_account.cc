// The maps are built on first use in static storage (no static constructors) and never
// destroyed: a program may free memory from an atexit handler after our destructors would run.
#include "intercept/mem_account.h"

#include <pthread.h>

#include <atomic>
#include <new>

#include "intercept/gate.h"
#include "intercept/handle_map.h"
#include "intercept/log.h"
#include "intercept/real_driver.h"

namespace sluice::intercept {
namespace {

std::atomic<int64_t> g_used{0};
std::atomic<int64_t> g_peak{0};
pthread_once_t g_maps_once = PTHREAD_ONCE_INIT;
alignas(HandleMap) unsigned char g_map_storage[2][sizeof(HandleMap)];
HandleMap* g_maps[2];

void BuildMaps() {
  for (int i = 0; i < 2; ++i)
    g_maps[i] = new (g_map_storage[i]) HandleMap(4096);
}

HandleMap& Map(AllocKind kind) {
  pthread_once(&g_maps_once, &BuildMaps);
  return *g_maps[static_cast<int>(kind)];
}

void RaisePeak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t p = peak.load(std::memory_order_relaxed);
  while (value > p && !peak.compare_exchange_weak(p, value, std::memory_order_relaxed)) {
  }
}

void MirrorDelta(int64_t delta) {
  Registration* reg = CurrentRegistration();
  if (reg == nullptr)
    return;
  std::atomic_ref<int64_t> used(reg->slot->mem_used_bytes);
  const int64_t now = used.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0) {
    std::atomic_ref<int64_t> peak(reg->slot->mem_peak_bytes);
    int64_t p = peak.load(std::memory_order_relaxed);
    while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
    }
  }
}

}  // namespace

int64_t MemLimitBytes() {
  EnsureGate();
  int64_t limit = LoadedConfig().mem_limit_bytes;
  if (Registration* reg = CurrentRegistration()) {
    const int64_t slot_limit =
        std::atomic_ref<int64_t>(reg->slot->mem_limit_bytes).load(std::memory_order_relaxed);
    if (slot_limit > 0 && (limit <= 0 || slot_limit < limit))
      limit = slot_limit;
  }
  return limit > 0 ? limit : 0;
}

int64_t MemUsedBytes() {
  return g_used.load(std::memory_order_relaxed);
}

bool ReserveMemory(int64_t bytes) {
  if (bytes < 0)
    return false;
  const int64_t limit = MemLimitBytes();
  int64_t used = g_used.load(std::memory_order_relaxed);
  do {
    if (limit > 0 && (bytes > limit || used > limit - bytes)) {
      LogVerbose("allocation of %lld bytes refused: %lld of %lld in use",
                 static_cast<long long>(bytes), static_cast<long long>(used),
                 static_cast<long long>(limit));
      return false;
    }
  } while (!g_used.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  RaisePeak(g_peak, used + bytes);
  MirrorDelta(bytes);
  return true;
}

void ReleaseMemory(int64_t bytes) {
  if (bytes <= 0)
    return;
  g_used.fetch_sub(bytes, std::memory_order_relaxed);
  MirrorDelta(-bytes);
}

void RecordAllocation(AllocKind kind, uint64_t key, int64_t bytes) {
  if (!Map(kind).Insert(key, bytes)) {
    // Out of memory for the map itself: stop charging this allocation rather than leak a charge
    // that no free could ever return.
    LogAlways("allocation map full; %lld bytes left unaccounted", static_cast<long long>(bytes));
    ReleaseMemory(bytes);
  }
}

bool TakeAllocation(AllocKind kind, uint64_t key, int64_t* bytes) {
  return Map(kind).Erase(key, bytes);
}

void MirrorMemoryTo(Registration* reg) {
  const int64_t used = g_used.load(std::memory_order_relaxed);
  std::atomic_ref<int64_t>(reg->slot->mem_used_bytes).fetch_add(used, std::memory_order_relaxed);
}

}  // namespace sluice::intercept
