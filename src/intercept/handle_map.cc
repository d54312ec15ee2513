// Linear probing over a power-of-two table. Writers publish a slot's value before its key
// (release) so a lock-free reader that sees the key (acquire) sees a value written for it.
#include "intercept/handle_map.h"

#include <sched.h>

#include <cstdint>
#include <cstdlib>

namespace sluice::intercept {
namespace {

size_t RoundUpPow2(size_t n) {
  size_t c = 16;
  while (c < n)
    c <<= 1;
  return c;
}

}  // namespace

HandleMap::Table* HandleMap::NewTable(size_t capacity) {
  const size_t bytes = sizeof(Table) + (capacity - 1) * sizeof(Slot);
  void* mem = std::calloc(1, bytes);  // all-zero bytes are valid empty atomics
  if (mem == nullptr)
    return nullptr;
  Table* t = static_cast<Table*>(mem);
  t->mask = capacity - 1;
  t->retired_next = nullptr;
  return t;
}

HandleMap::HandleMap(size_t initial_capacity) : table_(NewTable(RoundUpPow2(initial_capacity))) {}

HandleMap::~HandleMap() {
  std::free(table_.load(std::memory_order_relaxed));
  for (Table* t = retired_; t != nullptr;) {
    Table* next = t->retired_next;
    std::free(t);
    t = next;
  }
}

size_t HandleMap::Probe(uint64_t key, size_t mask) {
  // Device pointers are aligned, so mix the bits (murmur3 finaliser) before masking.
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return static_cast<size_t>(key) & mask;
}

void HandleMap::Lock() const {
  for (int spins = 0; lock_.exchange(true, std::memory_order_acquire); ++spins) {
    while (lock_.load(std::memory_order_relaxed)) {
      if (++spins > 64)
        sched_yield();  // the holder was preempted; let it run
    }
  }
}

void HandleMap::Unlock() const {
  lock_.store(false, std::memory_order_release);
}

size_t HandleMap::capacity() const {
  return table_.load(std::memory_order_acquire)->mask + 1;
}

bool HandleMap::Find(uint64_t key, int64_t* value) const {
  if (key == 0 || key == kTombstone)
    return false;
  const Table* t = table_.load(std::memory_order_acquire);
  if (t == nullptr)
    return false;
  for (size_t i = Probe(key, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
    const uint64_t k = t->slots[i].key.load(std::memory_order_acquire);
    if (k == 0)
      return false;
    if (k == key) {
      if (value != nullptr)
        *value = t->slots[i].value.load(std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

bool HandleMap::GrowLocked() {
  Table* old = table_.load(std::memory_order_relaxed);
  const size_t live = live_.load(std::memory_order_relaxed);
  const size_t capacity = RoundUpPow2(live * 4 > old->mask + 1 ? live * 4 : old->mask + 1);
  Table* t = NewTable(capacity);
  if (t == nullptr)
    return false;
  for (size_t i = 0; i <= old->mask; ++i) {
    const uint64_t k = old->slots[i].key.load(std::memory_order_relaxed);
    if (k == 0 || k == kTombstone)
      continue;
    size_t j = Probe(k, t->mask);
    while (t->slots[j].key.load(std::memory_order_relaxed) != 0)
      j = (j + 1) & t->mask;
    t->slots[j].value.store(old->slots[i].value.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
    t->slots[j].key.store(k, std::memory_order_relaxed);
  }
  table_.store(t, std::memory_order_release);  // publishes every slot written above
  old->retired_next = retired_;
  retired_ = old;
  used_ = live;
  return true;
}

bool HandleMap::Insert(uint64_t key, int64_t value) {
  if (key == 0 || key == kTombstone)
    return false;
  Lock();
  Table* t = table_.load(std::memory_order_relaxed);
  if (t == nullptr || ((used_ + 1) * 2 > t->mask + 1 && !GrowLocked())) {
    Unlock();
    return false;
  }
  t = table_.load(std::memory_order_relaxed);
  size_t free_slot = SIZE_MAX;
  size_t i = Probe(key, t->mask);
  for (;; i = (i + 1) & t->mask) {
    const uint64_t k = t->slots[i].key.load(std::memory_order_relaxed);
    if (k == key) {  // overwrite in place
      t->slots[i].value.store(value, std::memory_order_release);
      Unlock();
      return true;
    }
    if (k == kTombstone && free_slot == SIZE_MAX)
      free_slot = i;
    if (k == 0)
      break;
  }
  if (free_slot == SIZE_MAX) {
    free_slot = i;
    ++used_;  // a never-used slot becomes used; reusing a tombstone does not change `used_`
  }
  t->slots[free_slot].value.store(value, std::memory_order_relaxed);
  t->slots[free_slot].key.store(key, std::memory_order_release);
  live_.fetch_add(1, std::memory_order_relaxed);
  Unlock();
  return true;
}

bool HandleMap::Erase(uint64_t key, int64_t* value) {
  if (key == 0 || key == kTombstone)
    return false;
  Lock();
  Table* t = table_.load(std::memory_order_relaxed);
  bool found = false;
  if (t != nullptr) {
    for (size_t i = Probe(key, t->mask), n = 0; n <= t->mask; i = (i + 1) & t->mask, ++n) {
      const uint64_t k = t->slots[i].key.load(std::memory_order_relaxed);
      if (k == 0)
        break;
      if (k == key) {
        if (value != nullptr)
          *value = t->slots[i].value.load(std::memory_order_relaxed);
        t->slots[i].key.store(kTombstone, std::memory_order_release);
        live_.fetch_sub(1, std::memory_order_relaxed);
        found = true;
        break;
      }
    }
  }
  Unlock();
  return found;
}

}  // namespace sluice::intercept
