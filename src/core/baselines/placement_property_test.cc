// Property tests for the static placements over seeded random clusters and add/remove streams:
// never over-commit share or memory, every placed instance fits, exhaustion is genuine (a
// brute-force search finds no placement either), best fit is best, and the indices agree with a
// brute-force scan after every step. The seed is printed on failure.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "gtest/gtest.h"

#include "core/baselines/exclusive_placement.h"
#include "core/baselines/static_share_placement.h"
#include "core/baselines/testing/commit.h"

namespace sluice::core {
namespace {

constexpr double kEps = 1e-9;

ClusterSpec RandomCluster(std::mt19937& rng) {
  ClusterSpec spec;
  const int nodes = std::uniform_int_distribution<int>(1, 12)(rng);
  for (int n = 0; n < nodes; ++n) {
    NodeSpec ns;
    ns.gpu_count = std::uniform_int_distribution<int>(1, 8)(rng);
    ns.gpu.memory = Bytes::GiB(rng() % 3 == 0 ? 80 : 40);
    spec.nodes.push_back(ns);
  }
  return spec;
}

InstanceDemand RandomDemand(std::mt19937& rng, int inst) {
  InstanceDemand d;
  d.function = FunctionId(inst % 7);
  d.instance = InstanceId(inst);
  d.gpus = rng() % 5 == 0 ? std::uniform_int_distribution<int>(2, 5)(rng) : 1;
  d.same_node = rng() % 2 == 0;
  d.memory_per_gpu = Bytes::MiB(std::uniform_int_distribution<int>(256, 46 * 1024)(rng));
  const double req = std::uniform_int_distribution<int>(1, 100)(rng) / 100.0;
  const double lim = std::min(1.0, req * std::uniform_real_distribution<double>(1, 2)(rng));
  d.quota = {req, lim};
  return d;
}

// Brute force: which GPUs could host one GPU's worth of `d` (share < 0: exclusive).
std::vector<GpuId> FittingGpus(const ClusterState& c, const InstanceDemand& d, double share,
                               ShareBasis basis) {
  std::vector<GpuId> out;
  for (const GpuState& g : c.gpus()) {
    const double used = basis == ShareBasis::kLimit ? g.sum_limit : g.sum_request;
    const bool share_ok = share < 0 ? !g.active() : used + share <= 1 + kEps;
    if (share_ok && g.memory_free() >= d.memory_per_gpu)
      out.push_back(g.id);
  }
  return out;
}

bool FeasibleBruteForce(const ClusterState& c, const InstanceDemand& d,
                        const std::vector<GpuId>& fitting) {
  if (!d.same_node || d.gpus == 1)
    return static_cast<int>(fitting.size()) >= d.gpus;
  std::map<int64_t, int> per_node;
  for (GpuId g : fitting)
    ++per_node[c.gpu(g).node.value()];
  for (auto [node, n] : per_node) {
    if (n >= d.gpus)
      return true;
  }
  return false;
}

int Bucket(double free_share) {
  return static_cast<int>(std::floor(free_share * 1000 + 1e-6));
}

double UsedShare(const GpuState& g, ShareBasis basis) {
  return basis == ShareBasis::kLimit ? g.sum_limit : g.sum_request;
}

// Checks a successful placement of `d` before it is committed: right count, distinct GPUs, each
// fits, one node when asked, and (single-GPU shares) best fit among active GPUs.
void CheckPlaced(const ClusterState& c, const InstanceDemand& d, const std::vector<GpuId>& got,
                 const std::vector<GpuId>& fitting, ShareBasis basis, bool exclusive) {
  ASSERT_EQ(static_cast<int>(got.size()), d.gpus);
  ASSERT_EQ(std::set<GpuId>(got.begin(), got.end()).size(), got.size());
  std::set<int64_t> nodes;
  for (GpuId g : got) {
    ASSERT_TRUE(std::find(fitting.begin(), fitting.end(), g) != fitting.end())
        << "GPU " << g << " does not fit";
    nodes.insert(c.gpu(g).node.value());
  }
  if (d.same_node) {
    ASSERT_EQ(nodes.size(), 1u);
  }
  if (exclusive || d.gpus != 1)
    return;
  const GpuState& chosen = c.gpu(got[0]);
  for (GpuId g : fitting) {
    const GpuState& o = c.gpu(g);
    if (!o.active())
      continue;
    ASSERT_TRUE(chosen.active()) << "empty GPU chosen while active GPU " << g << " fits";
    ASSERT_LE(Bucket(1 - UsedShare(chosen, basis)), Bucket(1 - UsedShare(o, basis)))
        << "not best fit vs GPU " << g;
  }
}

// After every step: no GPU over memory; exclusive GPUs hold one instance; shares sum to <= 1.
void CheckCluster(const ClusterState& c, ShareBasis basis, bool exclusive) {
  for (const GpuState& g : c.gpus()) {
    ASSERT_LE(g.memory_used, g.spec.memory);
    if (exclusive) {
      ASSERT_LE(g.allocations.size(), 1u);
    } else {
      ASSERT_LE(UsedShare(g, basis), 1 + kEps) << "GPU " << g.id << " over-committed";
    }
  }
}

// One random stream of adds (70 %) and removes (30 %) against `p`.
void RunStream(uint32_t seed, PlacementPolicy& p, ShareBasis basis, bool exclusive,
               const std::function<absl::Status(const ClusterState&)>& check_index) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed << " policy=" << p.name());
  std::mt19937 rng(seed);
  ClusterState c(RandomCluster(rng));
  std::vector<InstanceId> live;
  for (int step = 0; step < 300; ++step) {
    SCOPED_TRACE(testing::Message() << "step=" << step);
    if (!live.empty() && rng() % 10 < 3) {
      const size_t i = rng() % live.size();
      RemoveAndNotify(p, c, live[i]);
      live[i] = live.back();
      live.pop_back();
    } else {
      const InstanceDemand d = RandomDemand(rng, step);
      const double share = exclusive                     ? -1
                           : basis == ShareBasis::kLimit ? d.quota.limit
                                                         : d.quota.request;
      const std::vector<GpuId> fitting = FittingGpus(c, d, share, basis);
      absl::StatusOr<std::vector<GpuId>> got = p.Place(d, c);
      if (!got.ok()) {
        ASSERT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted) << got.status();
        ASSERT_FALSE(FeasibleBruteForce(c, d, fitting)) << "missed a feasible placement";
        continue;
      }
      CheckPlaced(c, d, *got, fitting, basis, exclusive);
      if (::testing::Test::HasFatalFailure())
        return;
      const SmQuota quota = exclusive ? SmQuota{1, 1} : d.quota;
      for (GpuId g : *got) {
        const Allocation a{d.instance, d.function, g, d.memory_per_gpu, quota};
        ASSERT_TRUE(c.Add(a).ok());
        p.OnAdded(a, c);
      }
      live.push_back(d.instance);
    }
    CheckCluster(c, basis, exclusive);
    if (::testing::Test::HasFatalFailure())
      return;
    const absl::Status idx = check_index(c);
    ASSERT_TRUE(idx.ok()) << idx;
  }
}

TEST(PlacementPropertyTest, ExclusiveRandomStreams) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    for (NodeOrder order : {NodeOrder::kMostAllocated, NodeOrder::kLeastAllocated}) {
      ExclusivePlacement p(order);
      RunStream(seed, p, ShareBasis::kLimit, true,
                [&](const ClusterState& c) { return p.CheckIndex(c); });
      if (HasFatalFailure())
        return;
    }
  }
}

TEST(PlacementPropertyTest, StaticShareRandomStreams) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    for (ShareBasis basis : {ShareBasis::kLimit, ShareBasis::kRequest}) {
      StaticSharePlacement p(
          {"mps", basis, seed % 2 ? NodeOrder::kMostAllocated : NodeOrder::kLeastAllocated});
      RunStream(seed, p, basis, false, [&](const ClusterState& c) { return p.CheckIndex(c); });
      if (HasFatalFailure())
        return;
    }
  }
}

}  // namespace
}  // namespace sluice::core
