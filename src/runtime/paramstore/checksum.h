// Checksums of parameter bytes. FrameChecksum: the per-chunk integrity check of chain transfers
// (hardware CRC32C). Checksum64: a general 64-bit hash (readers' and benches' checks, the agent's
// file-model names): four independent 64-bit multiply-rotate lanes in the style of xxHash64. Not
// cryptographic: they catch truncation, reordering and bit errors, not attackers.
// Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHECKSUM_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

namespace sluice::runtime {

// Checksum of `size` bytes at `data` (any alignment). Deterministic across runs and hosts of the
// same endianness; different lengths of zeros give different values.
uint64_t Checksum64(const void* data, size_t size);

// The per-chunk check of chain transfers (chain protocol v3; docs/parameter-store.md): CRC32C
// (the Castagnoli polynomial of iSCSI and ext4) of the data's four quarters computed side by
// side, folded with the length into 64 bits. Uses the CPU's CRC32 instruction (SSE4.2, checked
// at run time) where it has one: about 1.4x cheaper than Checksum64 per byte on this box; the
// table-driven fallback gives the same values. Detects every error burst of up to 32 bits within
// a quarter and misses about one random corruption in 2^32; not an attacker. Thread-safe.
uint64_t FrameChecksum(const void* data, size_t size);
// The table-driven FrameChecksum (what CPUs without SSE4.2 run); for tests.
uint64_t FrameChecksumPortable(const void* data, size_t size);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHECKSUM_H_
