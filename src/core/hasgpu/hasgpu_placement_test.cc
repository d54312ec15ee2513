// HasGpuPlacement: argmin HGO among fitting GPUs, alignment (type limit, time per slot), a new GPU
// only when no active one fits, best fit for fast-gshare, multi-GPU demands and bad demands.
#include "core/hasgpu/hasgpu_placement.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

class HasGpuPlacementTest : public testing::Test {
 protected:
  HasGpuPlacementTest() : state_(ClusterSpec::Uniform(2, NodeSpec{})) {}

  void Add(int inst, int gpu, double s, double q, double gib = 4) {
    ASSERT_TRUE(
        state_.Add({InstanceId(inst), FunctionId(inst), GpuId(gpu), Bytes::GiB(gib), {s, s, q}})
            .ok());
  }
  absl::StatusOr<std::vector<GpuId>> Place(double s, double q, int gpus = 1, bool same = false,
                                           HeldOrder order = HeldOrder::kLeastHeld) {
    HasGpuPlacement p({"has-gpu", 2, order});
    InstanceDemand d;
    d.instance = InstanceId(100);
    d.gpus = gpus;
    d.same_node = same;
    d.memory_per_gpu = Bytes::GiB(4);
    d.quota = {s, s, q};
    return p.Place(d, state_);
  }

  ClusterState state_;
};

TEST_F(HasGpuPlacementTest, ChoosesLeastHgoAmongFittingGpus) {
  Add(1, 0, 0.6, 1.0);  // H = 0.6
  Add(2, 1, 0.5, 0.6);  // H = 0.3
  Add(3, 2, 0.4, 1.0);  // H = 0.4
  absl::StatusOr<std::vector<GpuId>> g = Place(0.2, 0.5);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, std::vector<GpuId>{GpuId(1)});
  // Best fit (fast-gshare) takes the most held GPU that fits.
  EXPECT_EQ(*Place(0.2, 0.5, 1, false, HeldOrder::kMostHeld), std::vector<GpuId>{GpuId(0)});
}

TEST_F(HasGpuPlacementTest, RespectsTypeLimitAndTimePerSlot) {
  Add(1, 0, 0.3, 0.5);
  Add(2, 0, 0.2, 0.5);  // GPU0: types 0.3 and 0.2 (limit 2), H = 0.25
  Add(3, 1, 0.5, 0.6);
  Add(4, 1, 0.5, 0.6);  // GPU1: type 0.5, Q = 1.2 -> both halves slotted, H = 0.6
  // A third type cannot join GPU0, GPU1 has no free block: a new GPU (the lowest idle one).
  EXPECT_EQ(*Place(0.4, 0.5), std::vector<GpuId>{GpuId(2)});
  // Type 0.5 on GPU1: 0.8 of time left in its two slots.
  EXPECT_EQ(*Place(0.5, 0.8), std::vector<GpuId>{GpuId(1)});
  EXPECT_EQ(*Place(0.5, 0.9), std::vector<GpuId>{GpuId(2)});
  // An existing type on GPU0 (least held) is followed.
  EXPECT_EQ(*Place(0.3, 1.0), std::vector<GpuId>{GpuId(0)});
}

TEST_F(HasGpuPlacementTest, OpensANewGpuOnlyWhenNoActiveOneFits) {
  Add(1, 3, 0.5, 1.0);
  EXPECT_EQ(*Place(0.5, 1.0), std::vector<GpuId>{GpuId(3)});
  Add(2, 3, 0.5, 1.0);
  EXPECT_EQ(*Place(0.5, 1.0), std::vector<GpuId>{GpuId(0)});
}

TEST_F(HasGpuPlacementTest, MultiGpuAndSameNode) {
  for (int g = 0; g < 3; ++g)
    Add(g + 1, g, 1.0, 1.0);  // node 0 has one free GPU left
  absl::StatusOr<std::vector<GpuId>> two = Place(0.5, 0.5, 2, true);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<GpuId>{GpuId(4), GpuId(5)}));
  EXPECT_EQ(*Place(0.5, 0.5, 2, false), (std::vector<GpuId>{GpuId(3), GpuId(4)}));
  EXPECT_EQ(Place(0.5, 0.5, 5, true).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(HasGpuPlacementTest, RejectsBadDemands) {
  EXPECT_EQ(Place(0.5, 0.0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Place(0.5, 0.5, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::core
