// Checksum64: the per-chunk integrity check of parameter transfers (chain multicast) and of
// segments loaded from disk. Four independent 64-bit multiply-rotate lanes in the style of
// xxHash64 (not cryptographic: it catches truncation, reordering and bit errors, not attackers),
// about one memory pass fast. Thread-safe: pure function.
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHECKSUM_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

namespace sluice::runtime {

// Checksum of `size` bytes at `data` (any alignment). Deterministic across runs and hosts of the
// same endianness; different lengths of zeros give different values.
uint64_t Checksum64(const void* data, size_t size);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHECKSUM_H_
