// Lanes of 32 bytes per step keep four independent multiply chains in flight, so the loop runs
// near memory speed; the tail and the length are folded in at the end.
#include "runtime/paramstore/checksum.h"

#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sluice::runtime {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t Round(uint64_t acc, uint64_t v) { return Rotl(acc + v * kP2, 31) * kP1; }
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// FrameChecksum: four CRC32C lanes (independent, so the instruction's 3-cycle latency overlaps),
// lane i over quarter i, the last lane also over the < 32-byte tail. The fold chains the lanes
// through the CRC in two orders with different seeds, so a change in any one lane changes both
// halves (the CRC update is invertible in its state).
constexpr uint32_t kSeeds[4] = {0xFFFFFFFFu, 0x9E3779B9u, 0x7F4A7C15u, 0x85EBCA6Bu};
constexpr uint32_t kCastagnoli = 0x82F63B78u;  // reflected

struct CrcTable {
  uint32_t t[256];
  constexpr CrcTable() : t() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCastagnoli : c >> 1;
      t[i] = c;
    }
  }
};
constexpr CrcTable kCrcTable;

// What the SSE4.2 instructions compute (no pre/post inversion), a byte at a time.
inline uint32_t SoftCrc8(uint32_t c, unsigned char b) {
  return kCrcTable.t[(c ^ b) & 0xff] ^ (c >> 8);
}
inline uint32_t SoftCrc64(uint32_t c, uint64_t v) {
  for (int i = 0; i < 8; ++i) c = SoftCrc8(c, static_cast<unsigned char>(v >> (8 * i)));
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint64_t HardwareFrameChecksum(const unsigned char* p,
                                                                  size_t size) {
  const size_t q = size / 32 * 8;
  uint64_t l[4] = {kSeeds[0], kSeeds[1], kSeeds[2], kSeeds[3]};
  for (size_t i = 0; i < q; i += 8) {
    l[0] = _mm_crc32_u64(l[0], Load64(p + i));
    l[1] = _mm_crc32_u64(l[1], Load64(p + q + i));
    l[2] = _mm_crc32_u64(l[2], Load64(p + 2 * q + i));
    l[3] = _mm_crc32_u64(l[3], Load64(p + 3 * q + i));
  }
  size_t i = 4 * q;
  for (; i + 8 <= size; i += 8) l[3] = _mm_crc32_u64(l[3], Load64(p + i));
  for (; i < size; ++i) l[3] = _mm_crc32_u8(static_cast<uint32_t>(l[3]), p[i]);
  const uint64_t lo = _mm_crc32_u64(
      _mm_crc32_u64(_mm_crc32_u64(_mm_crc32_u64(l[0], l[1]), l[2]), l[3]), size);
  const uint64_t hi = _mm_crc32_u64(
      _mm_crc32_u64(_mm_crc32_u64(_mm_crc32_u64(l[3] ^ kSeeds[1], l[2]), l[1]), l[0]), ~size);
  return (hi << 32) | lo;
}
#endif

}  // namespace

uint64_t FrameChecksumPortable(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t q = size / 32 * 8;
  uint32_t l[4] = {kSeeds[0], kSeeds[1], kSeeds[2], kSeeds[3]};
  for (size_t i = 0; i < q; i += 8) {
    for (size_t k = 0; k < 4; ++k) l[k] = SoftCrc64(l[k], Load64(p + k * q + i));
  }
  size_t i = 4 * q;
  for (; i + 8 <= size; i += 8) l[3] = SoftCrc64(l[3], Load64(p + i));
  for (; i < size; ++i) l[3] = SoftCrc8(l[3], p[i]);
  const uint64_t lo = SoftCrc64(SoftCrc64(SoftCrc64(SoftCrc64(l[0], l[1]), l[2]), l[3]), size);
  const uint64_t hi =
      SoftCrc64(SoftCrc64(SoftCrc64(SoftCrc64(l[3] ^ kSeeds[1], l[2]), l[1]), l[0]), ~size);
  return (hi << 32) | lo;
}

uint64_t FrameChecksum(const void* data, size_t size) {
#if defined(__x86_64__)
  static const bool kHardware = __builtin_cpu_supports("sse4.2");
  if (kHardware) return HardwareFrameChecksum(static_cast<const unsigned char*>(data), size);
#endif
  return FrameChecksumPortable(data, size);
}

uint64_t Checksum64(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* end = p + size;
  uint64_t a = kP1 + kP2, b = kP2, c = 0, d = 0 - kP1;
  while (end - p >= 32) {
    a = Round(a, Load64(p));
    b = Round(b, Load64(p + 8));
    c = Round(c, Load64(p + 16));
    d = Round(d, Load64(p + 24));
    p += 32;
  }
  uint64_t h = Rotl(a, 1) + Rotl(b, 7) + Rotl(c, 12) + Rotl(d, 18) + static_cast<uint64_t>(size);
  while (end - p >= 8) {
    h = Rotl(h ^ Round(0, Load64(p)), 27) * kP1 + kP3;
    p += 8;
  }
  while (p < end) {
    h = Rotl(h ^ (*p++ * kP3), 11) * kP1;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  return h ^ (h >> 32);
}

}  // namespace sluice::runtime
