// Device-memory accounting for libsluice_cuda.so: a process-wide byte counter checked against the
// instance's limit (SLUICE_MEM_LIMIT_BYTES and the token server's per-slot limit, the smaller
// wins), and two O(1) maps remembering each live allocation's size (device pointers; cuMemCreate
// handles) so a free is charged to the allocation's own record. The counter is mirrored into the
// registered slot's mem_used_bytes for the server. Thread-safe: lock-free counter (CAS), maps per
// handle_map.h; no lock is ever held across a driver call.
#ifndef SLUICE_INTERCEPT_MEM_ACCOUNT_H_
#define SLUICE_INTERCEPT_MEM_ACCOUNT_H_

#include <cstdint>

namespace sluice::intercept {

struct Registration;

enum class AllocKind : int { kPointer = 0, kHandle = 1 };

// The effective limit in bytes; 0 = unlimited.
int64_t MemLimitBytes();
// Bytes currently charged to this process (reserved or allocated).
int64_t MemUsedBytes();

// Charges `bytes` if the limit allows (all-or-nothing); false means CUDA_ERROR_OUT_OF_MEMORY.
[[nodiscard]] bool ReserveMemory(int64_t bytes);
// Returns `bytes` previously reserved (failed allocation, or a free).
void ReleaseMemory(int64_t bytes);

// Remembers a successful allocation of `bytes` under `key` (device pointer or handle).
void RecordAllocation(AllocKind kind, uint64_t key, int64_t bytes);
// Forgets `key`, returning its recorded size; false for allocations we never saw (made before
// the library was loaded, or through an unaccounted path), which are then not charged.
bool TakeAllocation(AllocKind kind, uint64_t key, int64_t* bytes);

// Adds the current charge to a new registration's slot (called when (re-)registering).
void MirrorMemoryTo(Registration* reg);

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_MEM_ACCOUNT_H_
