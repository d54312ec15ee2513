// Strong integer ids for entities referred to across modules (GPUs, nodes, functions,
// instances, requests). Used everywhere instead of pointers. Thread-safe: value types.
#ifndef SLUICE_COMMON_IDS_H_
#define SLUICE_COMMON_IDS_H_

#include <cstdint>
#include <functional>
#include <ostream>

namespace sluice::common {

// A typed integer. Default-constructed ids are invalid (value -1).
template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(int64_t v) : value_(v) {}
  constexpr int64_t value() const { return value_; }
  constexpr bool valid() const { return value_ >= 0; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
  template <typename H>
  friend H AbslHashValue(H h, StrongId id) {
    return H::combine(std::move(h), id.value_);
  }
  friend std::ostream& operator<<(std::ostream& os, StrongId id) { return os << id.value_; }

 private:
  int64_t value_ = -1;
};

using GpuId = StrongId<struct GpuIdTag>;
using NodeId = StrongId<struct NodeIdTag>;
using FunctionId = StrongId<struct FunctionIdTag>;
using InstanceId = StrongId<struct InstanceIdTag>;
using RequestId = StrongId<struct RequestIdTag>;

}  // namespace sluice::common

template <typename Tag>
struct std::hash<sluice::common::StrongId<Tag>> {
  size_t operator()(sluice::common::StrongId<Tag> id) const noexcept {
    return std::hash<int64_t>()(id.value());
  }
};

#endif  // SLUICE_COMMON_IDS_H_
