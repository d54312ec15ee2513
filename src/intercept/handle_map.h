// HandleMap: an O(1) open-addressing map from a non-zero 64-bit handle (device pointer, memory
// handle, graph-exec handle) to an int64 value, used by libsluice_cuda.so's memory accounting
// and graph costs. Thread-safe: Find() is lock-free (readers never wait); Insert/Erase take a
// short spinlock that covers only a few probes, never a driver call. Tables are grown by copying;
// retired tables are kept (not freed) so concurrent lock-free readers stay valid; the total stays
// below twice the largest table. Uses libc calloc only (no libstdc++ runtime).
#ifndef SLUICE_INTERCEPT_HANDLE_MAP_H_
#define SLUICE_INTERCEPT_HANDLE_MAP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sluice::intercept {

class HandleMap {
 public:
  // `initial_capacity` is rounded up to a power of two (>= 16).
  explicit HandleMap(size_t initial_capacity = 1024);
  ~HandleMap();
  HandleMap(const HandleMap&) = delete;
  HandleMap& operator=(const HandleMap&) = delete;

  // Inserts or overwrites `key` (must be non-zero). Returns false only if memory for growing
  // the table cannot be allocated (the entry is then not stored).
  bool Insert(uint64_t key, int64_t value);
  // Removes `key`; returns true and its value in `*value` (nullable) if it was present.
  bool Erase(uint64_t key, int64_t* value);
  // Lock-free lookup; returns true and the value in `*value` (nullable) if present.
  bool Find(uint64_t key, int64_t* value) const;
  // Number of live entries (exact when no writer runs concurrently).
  size_t size() const { return live_.load(std::memory_order_relaxed); }
  // Current table capacity (for tests).
  size_t capacity() const;

 private:
  struct Slot {
    std::atomic<uint64_t> key;  // 0 = never used, kTombstone = erased
    std::atomic<int64_t> value;
  };
  struct Table {
    size_t mask;  // capacity - 1
    Table* retired_next;
    Slot slots[1];  // really `mask + 1` slots (allocated with calloc)
  };
  static constexpr uint64_t kTombstone = ~uint64_t{0};

  static Table* NewTable(size_t capacity);
  static size_t Probe(uint64_t key, size_t mask);
  void Lock() const;
  void Unlock() const;
  bool GrowLocked();  // rebuilds into a larger (or same-size, tombstone-free) table

  std::atomic<Table*> table_;
  Table* retired_ = nullptr;  // guarded by lock_
  size_t used_ = 0;           // live + tombstones in table_, guarded by lock_
  std::atomic<size_t> live_{0};
  mutable std::atomic<bool> lock_{false};
};

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_HANDLE_MAP_H_
