#include "core/net/flow_network.h"

#include "gtest/gtest.h"

namespace sluice::core::net {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

absl::Time At(double s) {
  return kT0 + absl::Seconds(s);
}

TEST(FlowNetworkTest, SingleBottleneckSharesEqually) {
  FlowNetwork net({100.0}, kT0);
  FlowId a = net.Start(kT0, {0}, 100);
  FlowId b = net.Start(kT0, {0}, 300);
  EXPECT_DOUBLE_EQ(net.rate(a), 50);
  EXPECT_DOUBLE_EQ(net.rate(b), 50);
  EXPECT_DOUBLE_EQ(net.link_load(0), 100);
  // a finishes at 2 s; b then runs alone at 100 B/s: 200 B left -> 4 s.
  EXPECT_EQ(net.NextCompletion(), At(2));
  EXPECT_EQ(net.AdvanceTo(At(2)), std::vector<FlowId>{a});
  EXPECT_DOUBLE_EQ(net.rate(b), 100);
  EXPECT_NEAR(net.remaining(b), 200, 1e-6);
  EXPECT_EQ(net.NextCompletion(), At(4));
  EXPECT_EQ(net.AdvanceTo(At(10)), std::vector<FlowId>{b});
  EXPECT_EQ(net.num_active(), 0u);
  EXPECT_EQ(net.NextCompletion(), absl::InfiniteFuture());
  EXPECT_NEAR(net.link_bytes(0), 400, 1e-6);
}

// The textbook example: link 0 (10) carries f1 and f2, link 1 (4) carries f2 and f3. Link 1 is
// the first bottleneck (2 each), then f1 takes the rest of link 0 (8).
TEST(FlowNetworkTest, TwoBottlenecks) {
  FlowNetwork net({10.0, 4.0}, kT0);
  FlowId f1 = net.Start(kT0, {0}, 1000);
  FlowId f2 = net.Start(kT0, {0, 1}, 1000);
  FlowId f3 = net.Start(kT0, {1}, 1000);
  EXPECT_DOUBLE_EQ(net.rate(f1), 8);
  EXPECT_DOUBLE_EQ(net.rate(f2), 2);
  EXPECT_DOUBLE_EQ(net.rate(f3), 2);
  EXPECT_DOUBLE_EQ(net.link_load(0), 10);
  EXPECT_DOUBLE_EQ(net.link_load(1), 4);
}

TEST(FlowNetworkTest, RateCapFreesBandwidthForOthers) {
  FlowNetwork net({100.0}, kT0);
  FlowId capped = net.Start(kT0, {0}, 1000, 10.0);
  FlowId free = net.Start(kT0, {0}, 1000);
  EXPECT_DOUBLE_EQ(net.rate(capped), 10);
  EXPECT_DOUBLE_EQ(net.rate(free), 90);
  // A cap above the fair share does not bind.
  FlowNetwork net2({100.0}, kT0);
  FlowId loose = net2.Start(kT0, {0}, 1000, 80.0);
  FlowId other = net2.Start(kT0, {0}, 1000);
  EXPECT_DOUBLE_EQ(net2.rate(loose), 50);
  EXPECT_DOUBLE_EQ(net2.rate(other), 50);
}

TEST(FlowNetworkTest, EmptyPathIsALocalCopyAtItsCap) {
  FlowNetwork net({100.0}, kT0);
  FlowId local = net.Start(kT0, {}, 500, 250.0, 7);
  EXPECT_EQ(net.tag(local), 7u);
  EXPECT_DOUBLE_EQ(net.rate(local), 250);
  EXPECT_DOUBLE_EQ(net.link_load(0), 0);
  EXPECT_EQ(net.NextCompletion(), At(2));
  EXPECT_EQ(net.AdvanceTo(At(2)), std::vector<FlowId>{local});
}

TEST(FlowNetworkTest, CancelRedistributesAndIsIdempotent) {
  FlowNetwork net({100.0}, kT0);
  FlowId a = net.Start(kT0, {0}, 1000);
  FlowId b = net.Start(kT0, {0}, 1000);
  net.Cancel(At(1), a);
  EXPECT_FALSE(net.active(a));
  EXPECT_EQ(net.rate(a), 0);
  EXPECT_EQ(net.tag(a), 0u);
  EXPECT_DOUBLE_EQ(net.rate(b), 100);
  EXPECT_NEAR(net.remaining(b), 950, 1e-6);
  net.Cancel(At(1), a);
  net.Cancel(At(1), 12345);
  EXPECT_EQ(net.num_active(), 1u);
  EXPECT_NEAR(net.link_bytes(0), 100, 1e-6);
}

TEST(FlowNetworkTest, CompletionOrderWhenJumpingPastSeveral) {
  FlowNetwork net({100.0, 100.0}, kT0);
  FlowId slow = net.Start(kT0, {0}, 400);
  FlowId fast = net.Start(kT0, {1}, 100);
  FlowId mid = net.Start(kT0, {0}, 100);
  // mid: 50 B/s until 2 s; slow then alone: 300 B at 100 -> 5 s; fast at 1 s.
  std::vector<FlowId> done = net.AdvanceTo(At(100));
  EXPECT_EQ(done, (std::vector<FlowId>{fast, mid, slow}));
  EXPECT_NEAR(net.link_bytes(0), 500, 1e-6);
}

TEST(FlowNetworkTest, SimultaneousCompletionsInIdOrder) {
  FlowNetwork net({100.0, 100.0}, kT0);
  FlowId a = net.Start(kT0, {1}, 100);
  FlowId b = net.Start(kT0, {0}, 100);
  EXPECT_EQ(net.AdvanceTo(At(1)), (std::vector<FlowId>{a, b}));
}

TEST(FlowNetworkTest, TimeAtBytesMarksLayerBoundaries) {
  FlowNetwork net({100.0}, kT0);
  FlowId f = net.Start(kT0, {0}, 1000);
  EXPECT_EQ(net.TimeAtBytes(f, 250), At(2.5));
  EXPECT_TRUE(net.AdvanceTo(At(1)).empty());
  EXPECT_EQ(net.TimeAtBytes(f, 50), At(1));  // already moved
  // A second flow halves the rate: 150 B more at 50 B/s.
  FlowId g = net.Start(At(1), {0}, 1000);
  EXPECT_EQ(net.TimeAtBytes(f, 250), At(4));
  EXPECT_EQ(net.TimeAtBytes(g + 100, 1), absl::InfiniteFuture());
  FlowId stuck = net.Start(At(1), {0}, 10, 0.0);
  EXPECT_EQ(net.rate(stuck), 0);
  EXPECT_EQ(net.TimeAtBytes(stuck, 5), absl::InfiniteFuture());
}

TEST(FlowNetworkTest, NearlyStalledFlowHasNoFiniteCompletion) {
  FlowNetwork net({100.0}, kT0);
  FlowId slow = net.Start(kT0, {0}, int64_t{1} << 40, 1e-3);
  EXPECT_EQ(net.NextCompletion(), absl::InfiniteFuture());
  EXPECT_EQ(net.TimeAtBytes(slow, 1e12), absl::InfiniteFuture());
  EXPECT_TRUE(net.AdvanceTo(At(1e6)).empty());
  EXPECT_TRUE(net.active(slow));
}

TEST(FlowNetworkTest, IndependentComponentsKeepTheirRates) {
  FlowNetwork net({100.0, 10.0, 50.0}, kT0);
  FlowId a = net.Start(kT0, {0}, 1000);
  FlowId b = net.Start(kT0, {1, 2}, 1000);
  FlowId c = net.Start(kT0, {2}, 1000);
  EXPECT_DOUBLE_EQ(net.rate(a), 100);
  EXPECT_DOUBLE_EQ(net.rate(b), 10);
  EXPECT_DOUBLE_EQ(net.rate(c), 40);
  net.Cancel(kT0, b);
  EXPECT_DOUBLE_EQ(net.rate(c), 50);
  EXPECT_DOUBLE_EQ(net.rate(a), 100);
}

TEST(FlowNetworkTest, TimeNeverMovesBackwards) {
  FlowNetwork net({100.0}, kT0);
  EXPECT_TRUE(net.AdvanceTo(At(5)).empty());
  FlowId f = net.Start(At(1), {0}, 100);  // earlier than the last call: treated as At(5)
  EXPECT_EQ(net.NextCompletion(), At(6));
  EXPECT_EQ(net.AdvanceTo(At(6)), std::vector<FlowId>{f});
}

}  // namespace
}  // namespace sluice::core::net
