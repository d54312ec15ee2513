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

// A later round joins a transfer in progress: a hop appended after a member that is still
// loading gets each layer one layer time after it (pipelined), not after the whole model.
TEST(LayeredMulticastTest, AppendedHopChainsAfterALoadingMember) {
  FlowNetwork net({100.0, 100.0, 100.0}, kT0);
  auto m = LayeredMulticast::Create({Hop(-1, {{0}})}, {100, 100, 100, 100}, 1);
  ASSERT_TRUE(m.ok());
  m->Start(net, kT0);
  for (net::FlowId id : net.AdvanceTo(At(1)))
    m->OnFlowDone(net, id, At(1));
  net.AdvanceTo(At(1.5));
  ASSERT_EQ(m->layers_received(0), 1);
  ASSERT_TRUE(m->AddHops(net, {Hop(0, {{1}}), Hop(1, {{2}})}, At(1.5)).ok());
  EXPECT_EQ(m->num_hops(), 3);
  EXPECT_EQ(m->children(0), std::vector<int>{1});
  Drain(net, *m);
  EXPECT_TRUE(m->done());
  // Hop 1 takes layer 0 at 1.5 -> 2.5, then each layer as hop 0 delivers it (2, 3, 4 s): 3.5,
  // 4.5, 5.5 s; hop 2 one layer time behind: 6.5 s.
  EXPECT_EQ(m->layer_time(1, 3), At(5.5));
  EXPECT_EQ(m->layer_time(2, 3), At(6.5));
  // Bad parents name the field and add nothing.
  const absl::Status bad = m->AddHops(net, {Hop(7, {{1}})}, At(7));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("hops[3].parent"), std::string::npos) << bad;
  EXPECT_EQ(m->num_hops(), 3);
}

// The source feeding a root hop died: the hop moves to another source, keeping its layers.
TEST(LayeredMulticastTest, RerouteMovesAHopToAnotherSource) {
  FlowNetwork net({100.0, 100.0, 50.0}, kT0);
  auto m = LayeredMulticast::Create({Hop(-1, {{0}}), Hop(0, {{1}})}, {100, 100, 100, 100}, 1);
  ASSERT_TRUE(m.ok());
  m->Start(net, kT0);
  for (net::FlowId id : net.AdvanceTo(At(1)))
    m->OnFlowDone(net, id, At(1));
  net.AdvanceTo(At(1.5));
  m->RerouteHop(net, 0, At(1.5), -1, {{2}});  // now over the 50 B/s link
  EXPECT_EQ(m->parent(0), -1);
  EXPECT_EQ(m->children(-1), std::vector<int>{0});
  Drain(net, *m);
  EXPECT_TRUE(m->done());
  // Layer 1 restarts at 1.5 s: 2 s per layer -> 3.5, 5.5, 7.5 s.
  EXPECT_EQ(m->layer_time(0, 3), At(7.5));
  EXPECT_EQ(m->layer_time(1, 3), At(8.5));
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

// §6.3's "B-Cast": a serving GPU starts its 7 node-mates over NVLink. Each middle GPU's port
// carries one flow in and one out (100 GB/s each of 200 GB/s), so 13.5 GB takes ~0.135 s per hop,
// pipelined over 32 layers: (32 + 6) / 32 x 0.135 s ~ 0.16 s (the paper measures ~0.1 s).
TEST(LayeredMulticastTest, NvlinkBroadcastToSevenNodeMates) {
  const net::Topology topo = *net::Topology::Build(*net::NetPreset("blitzscale-a", 1));
  Endpoint source;
  source.gpus = {0};
  std::vector<Endpoint> targets;
  for (int g = 1; g < 8; ++g) {
    Endpoint t;
    t.gpus = {g};
    targets.push_back(t);
  }
  auto plan = PlanMulticast({source}, targets, topo);
  ASSERT_TRUE(plan.ok());
  PlanHops hops = HopsOfPlan(*plan, {source}, targets, topo);
  FlowNetwork net(topo.Capacities(), kT0);
  auto m = LayeredMulticast::Create(hops.hops, std::vector<int64_t>(32, 13.5e9 / 32), 1);
  m->Start(net, kT0);
  Drain(net, *m);
  absl::Time last = kT0;
  for (int h = 0; h < m->num_hops(); ++h) {
    last = std::max(last, m->layer_time(h, 31));
  }
  const double per_hop = 13.5e9 / (1600e9 / 8 / 2);
  EXPECT_NEAR(absl::ToDoubleSeconds(last - kT0), per_hop * 38 / 32, 0.01);
}

// Fig. 8/9: scaling from a prefill instance whose NIC sends KV-cache shares its tx link with that
// traffic; the pruned plan loads from the decode instance (whose NIC only receives) instead.
// Without pruning the two sources tie and the plan takes the first listed, the prefill.
TEST(LayeredMulticastTest, PrunedPlanAvoidsKvInterference) {
  const net::Topology topo = *net::Topology::Build(*net::NetPreset("blitzscale-b", 3));
  Endpoint prefill, decode, target;
  prefill.node = 0;
  prefill.gpus = {0};
  prefill.outcast_busy = true;
  decode.node = 1;
  decode.gpus = {0};
  decode.incast_busy = true;
  target.node = 2;
  target.gpus = {0};
  auto load_time = [&](bool prune, double* kv_rate_during_load) {
    PlanOptions options;
    options.prune_interference = prune;
    auto plan = PlanMulticast({prefill, decode}, {target}, topo, options);
    PlanHops hops = HopsOfPlan(*plan, {prefill, decode}, {target}, topo);
    FlowNetwork net(topo.Capacities(), kT0);
    const net::FlowId kv = net.Start(kT0, topo.GpuToGpu({0, 0}, {1, 0}), int64_t{1} << 50);
    auto m = LayeredMulticast::Create(hops.hops, std::vector<int64_t>(32, 13.5e9 / 32), 1);
    m->Start(net, kT0);
    *kv_rate_during_load = net.rate(kv);
    while (!m->done()) {
      const absl::Time t = net.NextCompletion();
      for (net::FlowId id : net.AdvanceTo(t)) {
        m->OnFlowDone(net, id, t);
      }
    }
    return absl::ToDoubleSeconds(m->layer_time(0, 31) - kT0);
  };
  double kv_pruned = 0, kv_naive = 0;
  const double pruned = load_time(true, &kv_pruned);
  const double naive = load_time(false, &kv_naive);
  const double nic = 100e9 / 8;
  EXPECT_NEAR(pruned, 13.5e9 / nic, 1e-3);  // the decode's idle tx: full NIC
  EXPECT_NEAR(naive / pruned, 2.0, 1e-3);   // the prefill's tx shared with KV
  EXPECT_DOUBLE_EQ(kv_pruned, nic);         // serving traffic untouched
  EXPECT_DOUBLE_EQ(kv_naive, nic / 2);      // serving traffic halved
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
  for (size_t h = 2; h < 6; ++h) {    // NVLink broadcasts: a chain through the node's members
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
