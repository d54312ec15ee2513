#include "core/blitz/layered_multicast.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core::blitz {
namespace {

using net::FlowNetwork;
using net::Path;

const absl::Time kT0 = absl::FromUnixSeconds(50);
absl::Time At(double s) {
  return kT0 + absl::Seconds(s);
}

HopSpec Hop(int parent, std::vector<Path> shards) {
  HopSpec h;
  h.parent = parent;
  h.shard_paths = std::move(shards);
  return h;
}

// Runs the network until no flow is left, feeding completions to the multicast.
void Drain(FlowNetwork& net, LayeredMulticast& m) {
  while (net.num_active() > 0) {
    const absl::Time t = net.NextCompletion();
    ASSERT_NE(t, absl::InfiniteFuture());
    for (net::FlowId id : net.AdvanceTo(t)) {
      m.OnFlowDone(net, id, t);
    }
  }
}

TEST(LayeredMulticastTest, ChainPipelinesLayers) {
  FlowNetwork net({100.0, 100.0, 100.0}, kT0);
  auto m = LayeredMulticast::Create({Hop(-1, {{0}}), Hop(0, {{1}}), Hop(1, {{2}})},
                                    {100, 100, 100, 100}, 9);
  ASSERT_TRUE(m.ok()) << m.status();
  m->Start(net, kT0);
  Drain(net, *m);
  ASSERT_TRUE(m->done());
  for (int h = 0; h < 3; ++h) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(m->layer_time(h, j), At(h + j + 1)) << "hop " << h << " layer " << j;
    }
  }
  // (layers + hops - 1) layer times, not layers x hops: forwarding overlaps.
  EXPECT_EQ(m->layer_time(2, 3), At(6));
}

TEST(LayeredMulticastTest, ShardsAndSharedLinks) {
  // Two root hops share link 0; the second has two shards, one on link 0 and one on link 1.
  FlowNetwork net({100.0, 100.0}, kT0);
  auto m = LayeredMulticast::Create({Hop(-1, {{0}}), Hop(-1, {{0}, {1}})}, {200}, 1);
  ASSERT_TRUE(m.ok());
  m->Start(net, kT0);
  EXPECT_EQ(net.num_active(), 3u);
  Drain(net, *m);
  // Link 0 carries 200 B (hop 0) + 100 B (hop 1, shard 0) at 50 B/s each until shard 0 is done
  // at 2 s; hop 0 then finishes its last 100 B alone at 3 s. Shard 1 (link 1) is done at 1 s.
  EXPECT_EQ(m->layer_time(1, 0), At(2));
  EXPECT_EQ(m->layer_time(0, 0), At(3));
}

TEST(LayeredMulticastTest, DeadMemberIsRoutedAround) {
  FlowNetwork net({100.0, 100.0, 100.0}, kT0);
  auto m = LayeredMulticast::Create({Hop(-1, {{0}}), Hop(0, {{1}})}, {100, 100, 100, 100}, 1);
  ASSERT_TRUE(m.ok());
  m->Start(net, kT0);
  // Run to 2.5 s: hop 0 has layers 0-1, hop 1 has layer 0 and is sending layer 1.
  for (net::FlowId id : net.AdvanceTo(At(1)))
    m->OnFlowDone(net, id, At(1));
  for (net::FlowId id : net.AdvanceTo(At(2)))
    m->OnFlowDone(net, id, At(2));
  net.AdvanceTo(At(2.5));
  ASSERT_EQ(m->layers_received(1), 1);
  std::vector<int> moved =
      m->FailHop(net, 0, At(2.5), [](int child) { return std::vector<Path>{{2}}; });
  EXPECT_EQ(moved, std::vector<int>{1});
  EXPECT_TRUE(m->failed(0));
  Drain(net, *m);
  EXPECT_TRUE(m->done());
  EXPECT_EQ(m->layers_received(1), 4);
  // Layer 1 restarts at 2.5 s from the source over link 2: layers 1-3 at 3.5, 4.5, 5.5 s.
  EXPECT_EQ(m->layer_time(1, 3), At(5.5));
}

// Serial forwarding: a chain to 3 receivers of a 32-layer model takes (32 + 2) / 32 of one
// transfer, not 3x (BlitzScale §5.1: the time is nearly independent of the receivers).
TEST(LayeredMulticastTest, ChainToThreeReceiversCostsAboutOneTransfer) {
  const net::Topology topo = *net::Topology::Build(*net::NetPreset("blitzscale-b", 4));
  auto run = [&](int receivers) {
    std::vector<HopSpec> hops;
    for (int r = 0; r < receivers; ++r) {
      hops.push_back(Hop(r - 1, {topo.GpuToGpu({r, 0}, {r + 1, 0})}));
    }
    FlowNetwork net(topo.Capacities(), kT0);
    auto m = LayeredMulticast::Create(hops, std::vector<int64_t>(32, 400 << 20), 1);
    m->Start(net, kT0);
    Drain(net, *m);
    return absl::ToDoubleSeconds(m->layer_time(receivers - 1, 31) - kT0);
  };
  const double one = run(1);
  EXPECT_NEAR(one, 32 * 400.0 * (1 << 20) / (100e9 / 8), 1e-6);
  EXPECT_NEAR(run(3) / one, 34.0 / 32.0, 1e-6);
}

TEST(LayeredMulticastTest, PredictedArrivalsMatchTheRunWhenNothingElseChanges) {
  FlowNetwork net({100.0, 100.0, 50.0}, kT0);
  auto m = LayeredMulticast::Create({Hop(-1, {{0}}), Hop(0, {{1}}), Hop(1, {{2}})},
                                    {100, 100, 100, 100}, 9);
  ASSERT_TRUE(m.ok());
  m->Start(net, kT0);
  for (net::FlowId id : net.AdvanceTo(At(1)))
    m->OnFlowDone(net, id, At(1));
  net.AdvanceTo(At(1.5));
  std::vector<std::vector<absl::Time>> predicted;
  for (int h = 0; h < 3; ++h) {
    predicted.push_back(m->PredictArrivals(net, h));
  }
  EXPECT_EQ(predicted[0][0], At(1));  // already received
  // Hop 1 receives at 2, 3, 4, 5 s; hop 2 runs at 50 B/s (2 s per layer): 4, 6, 8, 10 s.
  EXPECT_EQ(predicted[1][0], At(2));
  EXPECT_EQ(predicted[2][0], At(4));
  EXPECT_EQ(predicted[2][3], At(10));
  Drain(net, *m);
  for (int h = 0; h < 3; ++h) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(predicted[h][j], m->layer_time(h, j)) << "hop " << h << " layer " << j;
    }
  }
}

TEST(LayeredMulticastTest, BadInputNamesTheField) {
  EXPECT_NE(LayeredMulticast::Create({}, {1}, 0).status().message().find("hops"),
            std::string::npos);
  EXPECT_NE(LayeredMulticast::Create({Hop(1, {{0}}), Hop(-1, {{0}})}, {1}, 0)
                .status()
                .message()
                .find("hops[0].parent"),
            std::string::npos);
  EXPECT_NE(LayeredMulticast::Create({Hop(-1, {})}, {1}, 0).status().message().find("shard_paths"),
            std::string::npos);
  EXPECT_NE(LayeredMulticast::Create({Hop(-1, {{0}})}, {5, -1}, 0)
                .status()
                .message()
                .find("layer_bytes[1]"),
            std::string::npos);
}

TEST(LayeredMulticastTest, HopsOfPlanFollowChainsAndBroadcasts) {
  const net::Topology topo = *net::Topology::Build(*net::NetPreset("blitzscale-a", 3));
  Endpoint host;
  host.kind = Endpoint::Kind::kHost;
  std::vector<Endpoint> targets;
  for (int node : {1, 2}) {
    for (int g : {0, 1, 2}) {
      Endpoint t;
      t.node = node;
      t.gpus = {g};
      targets.push_back(t);
    }
  }
  auto plan = PlanMulticast({host}, targets, topo);
  ASSERT_TRUE(plan.ok());
  PlanHops hops = HopsOfPlan(*plan, {host}, targets, topo);
  ASSERT_EQ(hops.hops.size(), 6u);
  EXPECT_EQ(hops.hops[0].parent, -1);
  EXPECT_EQ(hops.hops[1].parent, 0);  // second chain member forwards from the first
  for (size_t h = 2; h < 6; ++h) {    // NVLink broadcasts hang off their leader
    const int leader_hop = hops.hops[h].parent;
    EXPECT_EQ(targets[hops.hop_target[leader_hop]].node, targets[hops.hop_target[h]].node);
    EXPECT_EQ(topo.link(hops.hops[h].shard_paths[0][0]).kind, net::LinkKind::kNvlink);
  }
  FlowNetwork net(topo.Capacities(), kT0);
  auto m = LayeredMulticast::Create(hops.hops, std::vector<int64_t>(32, 400 << 20), 3);
  ASSERT_TRUE(m.ok());
  m->Start(net, kT0);
  Drain(net, *m);
  EXPECT_TRUE(m->done());
  for (size_t h = 0; h < hops.hops.size(); ++h) {
    const int parent = hops.hops[h].parent;
    for (int j = 0; j < 32; ++j) {
      if (parent >= 0) {
        EXPECT_GE(m->layer_time(static_cast<int>(h), j), m->layer_time(parent, j));
      }
      if (j > 0) {
        EXPECT_GE(m->layer_time(static_cast<int>(h), j), m->layer_time(static_cast<int>(h), j - 1));
      }
    }
  }
}

}  // namespace
}  // namespace sluice::core::blitz
