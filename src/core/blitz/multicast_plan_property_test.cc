// Property test of PlanMulticast over seeded random clusters, sources and targets: every target
// exactly once, NVLink groups collapse, pruning keeps chains off outcast-busy sources, chain
// order by bandwidth, one chain per source, and the single-chain option.
#include <algorithm>
#include <random>

#include "gtest/gtest.h"

#include "core/blitz/multicast_plan.h"

namespace sluice::core::blitz {
namespace {

struct Case {
  net::Topology topo;
  std::vector<Endpoint> sources, targets;
  PlanOptions options;
};

Case RandomCase(std::mt19937_64& rng) {
  net::ClusterNetSpec spec;
  spec.nodes = 1 + static_cast<int>(rng() % 8);
  spec.gpus_per_node = 1 + static_cast<int>(rng() % 8);
  spec.nvlink_gbps = rng() % 2 ? 1600 : 0;
  spec.gpus_per_nic = 1 + static_cast<int>(rng() % 2);
  spec.rdma_gbps = rng() % 2 ? 100 : 200;
  Case c{*net::Topology::Build(spec), {}, {}, {}};
  // Free GPU slots, shuffled; instances take 1 or 2 GPUs of one node.
  std::vector<std::pair<int, int>> slots;
  for (int n = 0; n < spec.nodes; ++n) {
    for (int g = 0; g < spec.gpus_per_node; ++g) {
      slots.emplace_back(n, g);
    }
  }
  std::shuffle(slots.begin(), slots.end(), rng);
  auto take = [&]() {
    Endpoint e;
    e.node = slots.back().first;
    e.gpus = {slots.back().second};
    slots.pop_back();
    e.outcast_busy = rng() % 3 == 0;
    e.incast_busy = rng() % 4 == 0;
    return e;
  };
  const int n_src = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < n_src && !slots.empty(); ++i) {
    if (rng() % 3 == 0) {
      Endpoint h;
      h.kind = Endpoint::Kind::kHost;
      h.node = static_cast<int>(rng() % spec.nodes);
      h.outcast_busy = rng() % 3 == 0;
      c.sources.push_back(h);
    } else {
      c.sources.push_back(take());
    }
  }
  const int n_tgt = static_cast<int>(rng() % 24);
  for (int i = 0; i < n_tgt && !slots.empty(); ++i) {
    c.targets.push_back(take());
  }
  c.options.nvlink_grouping = rng() % 4 != 0;
  c.options.prune_interference = rng() % 4 != 0;
  c.options.order_by_link_speed = rng() % 4 != 0;
  c.options.multi_chain = rng() % 4 != 0;
  return c;
}

// A chain from a pruned (outcast-busy) source that stays inside its NVLink domain.
bool IsLocal(const Case& c, const Chain& ch) {
  const Endpoint& src = c.sources[ch.source];
  if (!c.options.prune_interference || !src.outcast_busy ||
      src.kind != Endpoint::Kind::kGpuInstance) {
    return false;
  }
  return std::all_of(ch.targets.begin(), ch.targets.end(), [&](int t) {
    return c.topo.SameNvlinkDomain({src.node, src.gpus[0]},
                                   {c.targets[t].node, c.targets[t].gpus[0]});
  });
}

void CheckPlan(const Case& c, const MulticastPlan& plan, uint64_t seed) {
  std::vector<int> seen(c.targets.size(), 0);
  std::vector<int> chains_of_source(c.sources.size(), 0);
  const bool some_idle = std::any_of(c.sources.begin(), c.sources.end(),
                                     [](const Endpoint& e) { return !e.outcast_busy; });
  int network_chains = 0;
  for (const Chain& ch : plan.chains) {
    ASSERT_FALSE(ch.targets.empty()) << "seed " << seed;
    ++chains_of_source[ch.source];
    const Endpoint& src = c.sources[ch.source];
    bool local_only = true;
    for (size_t i = 0; i < ch.targets.size(); ++i) {
      const Endpoint& t = c.targets[ch.targets[i]];
      ++seen[ch.targets[i]];
      local_only &= src.kind == Endpoint::Kind::kGpuInstance &&
                    c.topo.SameNvlinkDomain({src.node, src.gpus[0]}, {t.node, t.gpus[0]});
      if (c.options.order_by_link_speed && i > 0 && !t.outcast_busy) {
        ASSERT_LE(HopBandwidth(src, t, c.topo),
                  HopBandwidth(src, c.targets[ch.targets[i - 1]], c.topo))
            << "seed " << seed << ": chain order not non-increasing in bandwidth";
      }
    }
    if (c.options.prune_interference && some_idle && src.outcast_busy) {
      ASSERT_TRUE(local_only) << "seed " << seed << ": chain leaves a busy source's NIC";
    }
    network_chains += local_only && src.outcast_busy && c.options.prune_interference ? 0 : 1;
  }
  for (const NvlinkBroadcast& b : plan.broadcasts) {
    ASSERT_TRUE(c.options.nvlink_grouping) << "seed " << seed;
    for (int t : b.to) {
      ++seen[t];
      ASSERT_TRUE(c.topo.SameNvlinkDomain({c.targets[b.from].node, 0}, {c.targets[t].node, 0}))
          << "seed " << seed;
    }
  }
  for (size_t t = 0; t < seen.size(); ++t) {
    ASSERT_EQ(seen[t], 1) << "seed " << seed << ": target " << t;
  }
  for (int n : chains_of_source) {
    ASSERT_LE(n, 1) << "seed " << seed << ": more than one chain per source";
  }
  if (!c.options.multi_chain) {
    ASSERT_LE(network_chains, 1) << "seed " << seed;
  }
  if (c.options.order_by_link_speed && network_chains > 0) {
    // Balanced: no network chain longer than ceil(targets on network chains / chains).
    size_t on_network = 0;
    for (const Chain& ch : plan.chains) {
      on_network += ch.targets.size();
    }
    for (const Chain& ch : plan.chains) {
      on_network -= ch.targets.size() * (IsLocal(c, ch) ? 1 : 0);
    }
    const size_t k = static_cast<size_t>(network_chains);
    for (const Chain& ch : plan.chains) {
      if (!IsLocal(c, ch)) {
        ASSERT_LE(ch.targets.size(), (on_network + k - 1) / k) << "seed " << seed;
      }
    }
  }
  if (c.options.nvlink_grouping && c.topo.spec().nvlink_gbps > 0) {
    // Receivers (chain members) are one per NVLink domain.
    std::vector<int> receivers(c.topo.num_nodes(), 0);
    for (const Chain& ch : plan.chains) {
      for (int t : ch.targets) {
        ASSERT_EQ(++receivers[c.targets[t].node], 1) << "seed " << seed;
      }
    }
  }
}

TEST(MulticastPlanPropertyTest, RandomClusters) {
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937_64 rng(seed);
    const Case c = RandomCase(rng);
    auto plan = PlanMulticast(c.sources, c.targets, c.topo, c.options);
    ASSERT_TRUE(plan.ok()) << "seed " << seed << ": " << plan.status();
    CheckPlan(c, *plan, seed);
    if (testing::Test::HasFatalFailure()) {
      return;
    }
  }
}

}  // namespace
}  // namespace sluice::core::blitz
