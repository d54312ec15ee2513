// Unit and property tests for the KL-dispersed, cache-aware placement.
#include "core/quart/dispersed_placement.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using common::FunctionId;
using common::NodeId;

std::vector<CacheNode> Nodes(int m, int gpus) {
  std::vector<CacheNode> nodes(m);
  for (int j = 0; j < m; ++j) {
    nodes[j].id = NodeId(j);
    nodes[j].free_gpus = gpus;
  }
  return nodes;
}

StageRequest Req(int stage, bool key, int gpus = 1) {
  return StageRequest{StageKey{FunctionId(7), stage}, key, gpus};
}

DispersedPlacement Make(int slack = 1) {
  auto p = DispersedPlacement::Create({slack});
  EXPECT_TRUE(p.ok());
  return *p;
}

TEST(KlFromUniform, KnownValues) {
  EXPECT_DOUBLE_EQ(KlFromUniform({2, 2, 2, 2}), 0.0);
  EXPECT_NEAR(KlFromUniform({4, 0, 0, 0}), std::log(4.0), 1e-12);
  EXPECT_NEAR(KlFromUniform({1, 1, 0, 0}), std::log(2.0), 1e-12);
  EXPECT_EQ(KlFromUniform({0, 0}), 0.0);
  EXPECT_EQ(KlFromUniform({}), 0.0);
}

TEST(DispersedPlacement, KeyStagesSpreadOthersPack) {
  const auto out = Make().Place(Nodes(4, 8), {Req(0, true), Req(1, true), Req(2, true),
                                              Req(3, true), Req(4, false), Req(5, false)});
  EXPECT_EQ(out.placed, 6);
  EXPECT_DOUBLE_EQ(out.kl_after, 0.0);  // one key stage per node
  // The non-key stages go to the fullest node that fits (best fit), together.
  EXPECT_EQ(out.nodes[4], out.nodes[5]);
}

TEST(DispersedPlacement, KeyStagesPreferTheMostFreeGpus) {
  std::vector<CacheNode> nodes = Nodes(3, 4);
  nodes[1].free_gpus = 8;
  EXPECT_EQ(Make().Place(nodes, {Req(0, true)}).nodes[0], NodeId(1));
}

TEST(DispersedPlacement, CacheWinsWithinSlackOnly) {
  std::vector<CacheNode> nodes = Nodes(3, 8);
  nodes[2].cached = {StageKey{FunctionId(7), 3}};
  nodes[2].key_instances = 1;
  auto out = Make(1).Place(nodes, {Req(3, true)});
  EXPECT_EQ(out.nodes[0], NodeId(2));
  EXPECT_EQ(out.cache_hits, 1);
  out = Make(0).Place(nodes, {Req(3, true)});
  EXPECT_NE(out.nodes[0], NodeId(2));  // exact KL greedy: the less loaded node
  EXPECT_EQ(out.cache_hits, 0);
  nodes[2].key_instances = 2;
  EXPECT_NE(Make(1).Place(nodes, {Req(3, true)}).nodes[0], NodeId(2));  // beyond slack
}

TEST(DispersedPlacement, NonKeyStagesUseTheCache) {
  std::vector<CacheNode> nodes = Nodes(3, 8);
  nodes[0].free_gpus = 1;  // best fit would pick node 0
  nodes[1].cached = {StageKey{FunctionId(7), 5}};
  EXPECT_EQ(Make().Place(nodes, {Req(5, false)}).nodes[0], NodeId(1));
  EXPECT_EQ(Make().Place(nodes, {Req(4, false)}).nodes[0], NodeId(0));
}

TEST(DispersedPlacement, NoRoomLeavesInvalidId) {
  const auto out = Make().Place(Nodes(1, 2), {Req(0, true, 2), Req(1, false), Req(2, true)});
  EXPECT_EQ(out.placed, 1);
  EXPECT_EQ(out.nodes[0], NodeId(0));
  EXPECT_FALSE(out.nodes[1].valid());
  EXPECT_FALSE(out.nodes[2].valid());
}

TEST(DispersedPlacement, RejectsNegativeSlack) {
  EXPECT_NE(DispersedPlacement::Create({-1}).status().message().find("cache_slack"),
            std::string::npos);
}

// Random placement of the same key requests on the same nodes (uniform over nodes with room).
double RandomKl(const std::vector<CacheNode>& nodes, int key_requests, std::mt19937& rng) {
  std::vector<int> free(nodes.size()), keys(nodes.size());
  for (size_t j = 0; j < nodes.size(); ++j) {
    free[j] = nodes[j].free_gpus;
    keys[j] = nodes[j].key_instances;
  }
  for (int r = 0; r < key_requests; ++r) {
    std::vector<int> room;
    for (size_t j = 0; j < free.size(); ++j) {
      if (free[j] > 0)
        room.push_back(static_cast<int>(j));
    }
    if (room.empty())
      break;
    const int j = room[std::uniform_int_distribution<size_t>(0, room.size() - 1)(rng)];
    --free[j];
    ++keys[j];
  }
  return KlFromUniform(keys);
}

TEST(DispersedPlacementProperty, NeverWorseThanRandom) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    const int m = std::uniform_int_distribution<int>(2, 40)(rng);
    std::vector<CacheNode> nodes = Nodes(m, 0);
    for (CacheNode& n : nodes) {
      n.free_gpus = std::uniform_int_distribution<int>(0, 8)(rng);
      n.key_instances = std::uniform_int_distribution<int>(0, 3)(rng);
      if (rng() % 3 == 0)
        n.cached = {StageKey{FunctionId(7), static_cast<int>(rng() % 8)}};
    }
    const int k = std::uniform_int_distribution<int>(1, 4 * m)(rng);
    std::vector<StageRequest> reqs;
    for (int r = 0; r < k; ++r)
      reqs.push_back(Req(static_cast<int>(rng() % 8), true));
    const PlacementOutcome out = Make(0).Place(nodes, reqs);
    for (int trial = 0; trial < 5; ++trial) {
      ASSERT_LE(out.kl_after, RandomKl(nodes, k, rng) + 1e-12) << "seed " << seed;
    }
  }
}

TEST(DispersedPlacementProperty, NeverOverCommitsGpus) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const int m = std::uniform_int_distribution<int>(1, 20)(rng);
    std::vector<CacheNode> nodes = Nodes(m, 0);
    for (CacheNode& n : nodes)
      n.free_gpus = std::uniform_int_distribution<int>(0, 8)(rng);
    std::vector<StageRequest> reqs;
    for (int r = 0; r < 3 * m; ++r) {
      reqs.push_back(Req(static_cast<int>(rng() % 8), rng() % 2 == 0, 1 + rng() % 3));
    }
    const PlacementOutcome out = Make(1).Place(nodes, reqs);
    std::vector<int> used(m, 0);
    for (size_t r = 0; r < reqs.size(); ++r) {
      if (out.nodes[r].valid())
        used[out.nodes[r].value()] += reqs[r].gpus;
    }
    for (int j = 0; j < m; ++j)
      ASSERT_LE(used[j], nodes[j].free_gpus) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::core
