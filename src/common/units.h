// Units carried in types: Bytes (memory, model sizes) and Bandwidth (bytes per second),
// plus conversions to/from absl::Duration. GPU compute shares are plain doubles in [0, 1]
// of one GPU, always named `*_share`. Thread-safe: value types.
#ifndef SLUICE_COMMON_UNITS_H_
#define SLUICE_COMMON_UNITS_H_

#include <cstdint>
#include <ostream>

#include "absl/time/time.h"

namespace sluice::common {

class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t n) : n_(n) {}
  static constexpr Bytes KiB(double k) { return Bytes(static_cast<int64_t>(k * 1024.0)); }
  static constexpr Bytes MiB(double m) { return Bytes(static_cast<int64_t>(m * 1048576.0)); }
  static constexpr Bytes GiB(double g) { return Bytes(static_cast<int64_t>(g * 1073741824.0)); }
  constexpr int64_t count() const { return n_; }
  constexpr double gib() const { return static_cast<double>(n_) / 1073741824.0; }
  constexpr double mib() const { return static_cast<double>(n_) / 1048576.0; }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
  constexpr Bytes& operator+=(Bytes o) {
    n_ += o.n_;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    n_ -= o.n_;
    return *this;
  }
  friend std::ostream& operator<<(std::ostream& os, Bytes b) { return os << b.n_ << "B"; }

 private:
  int64_t n_ = 0;
};

// Bytes per second.
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth BytesPerSecond(double b) { return Bandwidth(b); }
  static constexpr Bandwidth GiBPerSecond(double g) { return Bandwidth(g * 1073741824.0); }
  constexpr double bytes_per_second() const { return bps_; }
  // Time to move `b` at this bandwidth; InfiniteDuration when the bandwidth is zero.
  absl::Duration TimeFor(Bytes b) const {
    if (bps_ <= 0) {
      return absl::InfiniteDuration();
    }
    return absl::Seconds(static_cast<double>(b.count()) / bps_);
  }
  friend constexpr auto operator<=>(Bandwidth, Bandwidth) = default;

 private:
  constexpr explicit Bandwidth(double bps) : bps_(bps) {}
  double bps_ = 0;
};

}  // namespace sluice::common

#endif  // SLUICE_COMMON_UNITS_H_
