// Property tests of FlowNetwork over seeded random networks and flow sequences: capacity is
// never exceeded, every uncapped flow has a saturated bottleneck on which its rate is maximal
// (the max-min certificate), incremental rates equal a from-scratch computation, and bytes are
// conserved.
#include <cmath>
#include <map>
#include <random>

#include "gtest/gtest.h"

#include "core/net/flow_network.h"
#include "core/net/topology.h"

namespace sluice::core::net {
namespace {

const absl::Time kT0 = absl::UnixEpoch();

struct Spec {
  Path path;
  double cap;
  int64_t bytes;
};

class RandomNet {
 public:
  explicit RandomNet(uint64_t seed) : rng_(seed) {
    const int links = std::uniform_int_distribution<int>(2, 40)(rng_);
    for (int i = 0; i < links; ++i) {
      caps_.push_back(std::exp(std::uniform_real_distribution<double>(0, 7)(rng_)));
    }
    net_ = std::make_unique<FlowNetwork>(caps_, kT0);
  }

  // A real cluster (many equal capacities, so many exact ties in the filling).
  RandomNet(uint64_t seed, const Topology& topo) : rng_(seed), topo_(&topo) {
    caps_ = topo.Capacities();
    net_ = std::make_unique<FlowNetwork>(caps_, kT0);
  }

  Spec RandomFlow() {
    if (topo_ != nullptr) {
      std::uniform_int_distribution<int> node(0, topo_->num_nodes() - 1);
      std::uniform_int_distribution<int> gpu(0, topo_->gpus_per_node() - 1);
      const GpuLoc dst{node(rng_), gpu(rng_)};
      Spec s;
      const int kind = static_cast<int>(rng_() % 3);
      s.path = kind == 0   ? topo_->GpuToGpu({node(rng_), gpu(rng_)}, dst)
               : kind == 1 ? topo_->HostToGpu(node(rng_), dst)
                           : topo_->SsdToGpu(dst);
      s.cap =
          Coin(0.2) ? caps_[topo_->NicTxLink(0, 0)] / 2 : std::numeric_limits<double>::infinity();
      if (s.path.empty()) {
        s.path = topo_->SsdToGpu(dst);
      }
      s.bytes = std::uniform_int_distribution<int64_t>(1 << 20, 1 << 30)(rng_);
      return s;
    }
    Spec s;
    const int len = std::uniform_int_distribution<int>(1, 4)(rng_);
    std::uniform_int_distribution<int> link(0, static_cast<int>(caps_.size()) - 1);
    while (static_cast<int>(s.path.size()) < len) {
      const int l = link(rng_);
      if (std::find(s.path.begin(), s.path.end(), l) == s.path.end()) {
        s.path.push_back(l);
      }
      if (s.path.size() == caps_.size()) {
        break;
      }
    }
    s.cap = Coin(0.3) ? std::exp(std::uniform_real_distribution<double>(0, 6)(rng_))
                      : std::numeric_limits<double>::infinity();
    s.bytes = std::uniform_int_distribution<int64_t>(1, 100000)(rng_);
    return s;
  }

  bool Coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  double Uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng_); }

  std::mt19937_64 rng_;
  const Topology* topo_ = nullptr;
  std::vector<double> caps_;
  std::unique_ptr<FlowNetwork> net_;
  std::map<FlowId, Spec> active_;
};

// Checks capacity, the max-min certificate and agreement with a from-scratch network.
void CheckMaxMin(const RandomNet& r, uint64_t seed) {
  const FlowNetwork& net = *r.net_;
  std::vector<double> load(r.caps_.size(), 0), max_rate(r.caps_.size(), 0);
  for (const auto& [id, s] : r.active_) {
    ASSERT_TRUE(net.active(id)) << "seed " << seed;
    for (int l : s.path) {
      load[l] += net.rate(id);
      max_rate[l] = std::max(max_rate[l], net.rate(id));
    }
  }
  for (size_t l = 0; l < r.caps_.size(); ++l) {
    ASSERT_LE(load[l], r.caps_[l] * (1 + 1e-9)) << "seed " << seed << " link " << l;
    ASSERT_NEAR(net.link_load(static_cast<int>(l)), load[l], 1e-7 * r.caps_[l]) << "seed " << seed;
  }
  FlowNetwork fresh(r.caps_, kT0);
  for (const auto& [id, s] : r.active_) {
    const double rate = net.rate(id);
    if (rate < s.cap * (1 - 1e-9)) {
      bool certified = false;
      for (int l : s.path) {
        certified |= load[l] >= r.caps_[l] * (1 - 1e-9) && rate >= max_rate[l] * (1 - 1e-9);
      }
      ASSERT_TRUE(certified) << "seed " << seed << ": flow " << id << " has no bottleneck";
    }
    const FlowId again = fresh.Start(kT0, s.path, s.bytes, s.cap);
    (void)again;
  }
  // Same flows in the same order: ids in `fresh` are 1..n in map order.
  FlowId k = 1;
  for (const auto& [id, s] : r.active_) {
    ASSERT_NEAR(net.rate(id), fresh.rate(k++), 1e-9 * std::max(1.0, net.rate(id)))
        << "seed " << seed << ": incremental and from-scratch rates differ";
  }
}

void Churn(RandomNet& r, uint64_t seed) {
  absl::Time now = kT0;
  for (int op = 0; op < 120; ++op) {
    const double dice = r.Uniform(0, 1);
    if (dice < 0.55 || r.active_.empty()) {
      Spec s = r.RandomFlow();
      r.active_[r.net_->Start(now, s.path, s.bytes, s.cap)] = s;
    } else if (dice < 0.7) {
      auto it = r.active_.begin();
      std::advance(it, std::uniform_int_distribution<size_t>(0, r.active_.size() - 1)(r.rng_));
      r.net_->Cancel(now, it->first);
      r.active_.erase(it);
    } else {
      const absl::Time next = r.net_->NextCompletion();
      now = r.Coin(0.5) && next != absl::InfiniteFuture()
                ? next
                : now + absl::Milliseconds(r.Uniform(0, 500));
      for (FlowId done : r.net_->AdvanceTo(now)) {
        ASSERT_EQ(r.active_.erase(done), 1u) << "seed " << seed;
      }
    }
    ASSERT_EQ(r.net_->num_active(), r.active_.size()) << "seed " << seed;
    CheckMaxMin(r, seed);
    if (testing::Test::HasFatalFailure()) {
      return;
    }
  }
}

TEST(FlowNetworkPropertyTest, MaxMinCertificateUnderRandomChurn) {
  for (uint64_t seed = 1; seed <= 200 && !HasFatalFailure(); ++seed) {
    RandomNet r(seed);
    Churn(r, seed);
  }
}

TEST(FlowNetworkPropertyTest, MaxMinOnClusterTopologiesWithTies) {
  for (const char* preset : {"blitzscale-a", "blitzscale-b"}) {
    const Topology topo = *Topology::Build(*NetPreset(preset, 3));
    for (uint64_t seed = 1; seed <= 50 && !HasFatalFailure(); ++seed) {
      RandomNet r(seed, topo);
      Churn(r, seed);
    }
  }
}

TEST(FlowNetworkPropertyTest, BytesConservedAndCompletionTimesMonotone) {
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    RandomNet r(seed);
    double expected = 0;
    absl::Time now = kT0;
    for (int i = 0; i < 60; ++i) {
      Spec s = r.RandomFlow();
      r.net_->Start(now, s.path, s.bytes, s.cap);
      expected += static_cast<double>(s.bytes) * s.path.size();
      now += absl::Milliseconds(r.Uniform(0, 50));
      r.net_->AdvanceTo(now);
    }
    absl::Time last = now;
    while (r.net_->num_active() > 0) {
      const absl::Time next = r.net_->NextCompletion();
      ASSERT_NE(next, absl::InfiniteFuture()) << "seed " << seed;
      ASSERT_GE(next, last) << "seed " << seed;
      ASSERT_FALSE(r.net_->AdvanceTo(next).empty()) << "seed " << seed;
      last = next;
    }
    double moved = 0;
    for (int l = 0; l < r.net_->num_links(); ++l) {
      moved += r.net_->link_bytes(l);
    }
    // Each completed flow may leave < 1 byte per link unaccounted.
    EXPECT_NEAR(moved, expected, 60 * 4 + 1e-9 * expected) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::core::net
