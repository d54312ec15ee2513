// SM-partition alignment bookkeeping. Types are matched within 1e-6 (quotas come from sums of
// steps) and time sums are compared with kEps of slack for the same reason.
#include "core/hasgpu/aligned_gpu.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {
namespace {

constexpr double kTypeEps = 1e-6;

}  // namespace

int SlotsFor(double time_sum) {
  if (time_sum <= AlignedGpu::kEps)
    return 0;
  return static_cast<int>(std::ceil(time_sum - 1e-7));
}

AlignedGpu::AlignedGpu(const GpuState& gpu, int max_types)
    : max_types_(max_types), memory_free_(gpu.memory_free()) {
  for (const Allocation& a : gpu.allocations) {
    AddPod(a.quota.limit, a.quota.time_quota, Bytes(0));
  }
}

const AlignedGpu::Type* AlignedGpu::Find(double sm) const {
  for (const Type& t : types_) {
    if (std::abs(t.sm - sm) <= kTypeEps)
      return &t;
  }
  return nullptr;
}

AlignedGpu::Type* AlignedGpu::Find(double sm) {
  return const_cast<Type*>(static_cast<const AlignedGpu*>(this)->Find(sm));
}

double AlignedGpu::SlotSpace() const {
  double space = 0;
  for (const Type& t : types_)
    space += SlotsFor(t.time_sum) * t.sm;
  return space;
}

int AlignedGpu::FreeBlocks(double sm) const {
  const double free = 1.0 - SlotSpace();
  if (sm <= 0 || free + kEps < sm)
    return 0;
  return static_cast<int>(std::floor((free + 1e-7) / sm));
}

double AlignedGpu::MaxNewQuota(double sm) const {
  const Type* t = Find(sm);
  if (t == nullptr) {
    if (static_cast<int>(types_.size()) >= max_types_)
      return 0;
    return FreeBlocks(sm) > 0 ? 1.0 : 0.0;
  }
  const double room = SlotsFor(t->time_sum) + FreeBlocks(sm) - t->time_sum;
  return std::clamp(room, 0.0, 1.0);
}

double AlignedGpu::MaxQuotaFor(double sm, double q) const {
  const Type* t = Find(sm);
  if (t == nullptr)
    return MaxNewQuota(sm);
  const double room = SlotsFor(t->time_sum) + FreeBlocks(sm) - (t->time_sum - q);
  return std::clamp(room, 0.0, 1.0);
}

bool AlignedGpu::Fits(double sm, double q, Bytes memory) const {
  return memory <= memory_free_ && q <= MaxNewQuota(sm) + kEps;
}

bool AlignedGpu::Valid() const {
  return static_cast<int>(types_.size()) <= max_types_ && SlotSpace() <= 1.0 + 1e-6;
}

void AlignedGpu::AddPod(double sm, double q, Bytes memory) {
  Type* t = Find(sm);
  if (t == nullptr) {
    types_.push_back(Type{sm, 0, 0});
    t = &types_.back();
  }
  t->time_sum += q;
  ++t->pods;
  held_ += sm * q;
  memory_free_ -= memory;
}

void AlignedGpu::ChangeQuota(double sm, double old_q, double new_q) {
  Type* t = Find(sm);
  if (t == nullptr)
    return;
  t->time_sum += new_q - old_q;
  held_ += sm * (new_q - old_q);
}

void AlignedGpu::RemovePod(double sm, double q, Bytes memory) {
  Type* t = Find(sm);
  if (t == nullptr)
    return;
  held_ -= sm * q;
  memory_free_ += memory;
  t->time_sum -= q;
  if (--t->pods <= 0) {
    types_.erase(types_.begin() + (t - types_.data()));
  }
}

}  // namespace sluice::core
