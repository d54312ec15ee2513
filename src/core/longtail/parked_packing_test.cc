// ParkedPacking: parked demands go to the fullest active GPU (by memory) that fits them, busy
// demands and parked ones that fit nowhere go to the wrapped placement, which sees every
// allocation.
#include "core/longtail/parked_packing.h"

#include "gtest/gtest.h"

#include "core/longtail/parking.h"

namespace sluice::core {
namespace {

// Always answers GPU `next`; counts what it is told.
class FixedPlacement final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "fixed"; }
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand&, const ClusterState&) override {
    ++placed;
    return std::vector<GpuId>{GpuId(next)};
  }
  void OnAdded(const Allocation&, const ClusterState&) override { ++added; }
  void OnRemoved(const Allocation&, const ClusterState&) override { ++removed; }
  void OnRequota(const Allocation&, const Allocation&, const ClusterState&) override {
    ++requoted;
  }
  int next = 3;
  int placed = 0, added = 0, removed = 0, requoted = 0;
};

ClusterSpec Spec() {
  ClusterSpec spec;
  NodeSpec n;
  n.gpu_count = 4;
  n.gpu.memory = Bytes::GiB(40);
  spec.nodes.push_back(n);
  return spec;
}

InstanceDemand Demand(SmQuota q, Bytes mem) {
  InstanceDemand d;
  d.gpus = 1;
  d.quota = q;
  d.memory_per_gpu = mem;
  return d;
}

TEST(ParkedPackingTest, ParkedDemandsBestFitByMemoryOnActiveGpus) {
  ClusterState state(Spec());
  auto inner = std::make_unique<FixedPlacement>();
  FixedPlacement* fixed = inner.get();
  ParkedPacking p(std::move(inner));
  ASSERT_TRUE(state.Add({InstanceId(1), FunctionId(1), GpuId(0), Bytes::GiB(10), {0.5, 1, 1}}).ok());
  ASSERT_TRUE(state.Add({InstanceId(2), FunctionId(2), GpuId(1), Bytes::GiB(30), {0.5, 1, 1}}).ok());
  // 8 GiB fits GPU 1 (10 GiB free), the fuller one.
  auto g = p.Place(Demand(ParkedQuota(), Bytes::GiB(8)), state);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)[0], GpuId(1));
  // 20 GiB fits only GPU 0.
  g = p.Place(Demand(ParkedQuota(), Bytes::GiB(20)), state);
  EXPECT_EQ((*g)[0], GpuId(0));
  EXPECT_EQ(fixed->placed, 0);
  // 35 GiB fits no active GPU: the wrapped placement opens one.
  g = p.Place(Demand(ParkedQuota(), Bytes::GiB(35)), state);
  EXPECT_EQ((*g)[0], GpuId(3));
  EXPECT_EQ(fixed->placed, 1);
}

TEST(ParkedPackingTest, BusyDemandsAndEveryAllocationGoToTheWrappedPlacement) {
  ClusterState state(Spec());
  auto inner = std::make_unique<FixedPlacement>();
  FixedPlacement* fixed = inner.get();
  ParkedPacking p(std::move(inner));
  ASSERT_TRUE(state.Add({InstanceId(1), FunctionId(1), GpuId(0), Bytes::GiB(1), {0.5, 1, 1}}).ok());
  auto g = p.Place(Demand({0.3, 0.6, 1}, Bytes::GiB(1)), state);
  EXPECT_EQ((*g)[0], GpuId(3));
  const Allocation a{InstanceId(5), FunctionId(1), GpuId(3), Bytes::GiB(1), ParkedQuota()};
  p.OnAdded(a, state);
  p.OnRequota(a, {InstanceId(5), FunctionId(1), GpuId(3), Bytes::GiB(1), {0.3, 0.6, 1}}, state);
  p.OnRemoved(a, state);
  EXPECT_EQ(fixed->added, 1);
  EXPECT_EQ(fixed->removed, 1);
  EXPECT_EQ(fixed->requoted, 1);  // forwarded as one call (the wrapped one re-indexes once)
  EXPECT_TRUE(IsParked(ParkedQuota()));
  EXPECT_FALSE(IsParked(SmQuota{0.3, 0.6, 1}));
}

}  // namespace
}  // namespace sluice::core
