// Lanes of 32 bytes per step keep four independent multiply chains in flight, so the loop runs
// near memory speed; the tail and the length are folded in at the end.
#include "runtime/paramstore/checksum.h"

#include <cstring>

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

}  // namespace

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
