// PriorityRateController (TGS): production gets every token, opportunistic rate probes up
// additively, backs off multiplicatively on interference, never drops below the floor; plus a
// closed loop against a fluid GPU and a seeded property over random activity.
#include "core/baselines/priority_rate_controller.h"

#include <optional>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

constexpr int64_t kMax = 100000;
const absl::Time kT0 = absl::UnixEpoch();

std::unique_ptr<PriorityRateController> Make(PriorityRateConfig cfg = {}) {
  auto c = PriorityRateController::Create(cfg);
  EXPECT_TRUE(c.ok()) << c.status();
  return std::move(*c);
}

InstanceActivity Act(int64_t id, bool slo, int64_t blocks) {
  InstanceActivity a;
  a.instance = InstanceId(id);
  a.quota = {0.3, 1.0};
  a.slo_sensitive = slo;
  a.blocks_launched = blocks;
  return a;
}

// One period: returns the tokens.
std::vector<int64_t> Tick(PriorityRateController& c, std::vector<InstanceActivity> acts) {
  std::vector<int64_t> tokens(acts.size(), -1);
  c.Issue(kT0, kMax, acts, tokens);
  return tokens;
}

TEST(PriorityRateControllerTest, ProductionGetsEverythingOpportunisticStartsLow) {
  auto c = Make();
  EXPECT_EQ(c->period(), absl::Milliseconds(5));
  // The inference instance is production even when listed second; training is opportunistic.
  auto t = Tick(*c, {Act(1, false, 0), Act(2, true, 0)});
  EXPECT_EQ(t[1], kMax);
  EXPECT_EQ(t[0], 5000);  // initial rate 0.05
  EXPECT_EQ(c->production(), InstanceId(2));
  // Alone, production still gets everything.
  EXPECT_EQ(Tick(*c, {Act(2, true, 50000)})[0], kMax);
}

TEST(PriorityRateControllerTest, ProbesUpWhileProductionHoldsAndBacksOffWhenItDrops) {
  auto c = Make();                                        // step 0.01, backoff 0.5, tolerance 5 %
  Tick(*c, {Act(1, true, 80000), Act(2, false, 20000)});  // first period: ref 80000, r 0.05
  EXPECT_DOUBLE_EQ(c->rate(), 0.05);
  EXPECT_DOUBLE_EQ(c->reference(), 80000);
  // Opportunistic uses its 5000 tokens and production holds 80000: probe +0.01 per period.
  for (int i = 1; i <= 3; ++i) {
    auto t = Tick(*c, {Act(1, true, 80000), Act(2, false, 5000 + 1000 * (i - 1))});
    EXPECT_NEAR(c->rate(), 0.05 + 0.01 * i, 1e-12);
    EXPECT_EQ(t[1], static_cast<int64_t>(kMax * (0.05 + 0.01 * i) + 0.5));
    EXPECT_EQ(t[0], kMax);
  }
  // Production drops to 70000 < 0.95 x 80000 while the opportunistic one runs: halve.
  auto t = Tick(*c, {Act(1, true, 70000), Act(2, false, 8000)});
  EXPECT_NEAR(c->rate(), 0.04, 1e-12);
  EXPECT_EQ(t[1], 4000);
  EXPECT_EQ(t[0], kMax);  // production's share is unaffected by the rate
}

TEST(PriorityRateControllerTest, IdleProductionOrIdleOpportunisticIsNoSignal) {
  auto c = Make();
  Tick(*c, {Act(1, true, 90000), Act(2, false, 1000)});
  // Production idle (0 blocks): not interference; opportunistic rate-limited: probe.
  Tick(*c, {Act(1, true, 0), Act(2, false, 5000)});
  EXPECT_NEAR(c->rate(), 0.06, 1e-12);
  // Opportunistic idle: production's drop is its own load, and there is nothing to probe for.
  Tick(*c, {Act(1, true, 10000), Act(2, false, 0)});
  EXPECT_NEAR(c->rate(), 0.06, 1e-12);
}

TEST(PriorityRateControllerTest, NeverBelowTheFloor) {
  PriorityRateConfig cfg;
  cfg.floor = 0.02;
  auto c = Make(cfg);
  Tick(*c, {Act(1, true, 100000), Act(2, false, 1), Act(3, false, 1)});
  std::vector<int64_t> t;
  for (int i = 0; i < 20; ++i) {  // production stays far below its reference: back off
    t = Tick(*c, {Act(1, true, 10000), Act(2, false, 1), Act(3, false, 1)});
    EXPECT_GE(c->rate(), 0.02);
    EXPECT_GE(t[1], 1000);
    EXPECT_GE(t[2], 1000);
  }
  EXPECT_DOUBLE_EQ(c->rate(), 0.02);
  EXPECT_EQ(t[1], 1000);  // 0.02 x kMax split over two opportunistic instances
  EXPECT_EQ(t[2], 1000);
}

TEST(PriorityRateControllerTest, NewProductionResetsAndBadConfigIsRejected) {
  auto c = Make();
  Tick(*c, {Act(1, true, 50000), Act(2, false, 5000)});
  Tick(*c, {Act(1, true, 50000), Act(2, false, 5000)});
  EXPECT_NEAR(c->rate(), 0.06, 1e-12);
  c->Forget(InstanceId(1));
  Tick(*c, {Act(3, true, 20000), Act(2, false, 6000)});
  EXPECT_EQ(c->production(), InstanceId(3));
  EXPECT_DOUBLE_EQ(c->rate(), 0.05);
  EXPECT_DOUBLE_EQ(c->reference(), 20000);

  PriorityRateConfig bad;
  bad.floor = 0;
  EXPECT_FALSE(PriorityRateController::Create(bad).ok());
  bad = {};
  bad.backoff = 1;
  EXPECT_FALSE(PriorityRateController::Create(bad).ok());
  bad = {};
  bad.initial_rate = 0.005;  // below the floor
  EXPECT_FALSE(PriorityRateController::Create(bad).ok());
  bad = {};
  bad.period = absl::InfiniteDuration();
  EXPECT_FALSE(PriorityRateController::Create(bad).ok());
}

TEST(PriorityRateControllerTest, ReplicasOfTheProductionFunctionAreAllProduction) {
  // Instances 1 and 3 belong to function 7 (a scaled-out inference function), 2 is training.
  auto function_of = [](InstanceId i) -> std::optional<FunctionId> {
    if (i == InstanceId(2))
      return FunctionId(8);
    if (i == InstanceId(9))
      return std::nullopt;  // unknown: opportunistic
    return FunctionId(7);
  };
  auto c = PriorityRateController::Create(PriorityRateConfig{}, function_of);
  ASSERT_TRUE(c.ok());
  auto t =
      Tick(**c, {Act(2, false, 100), Act(1, true, 30000), Act(3, true, 30000), Act(9, true, 100)});
  EXPECT_EQ(t[1], kMax);
  EXPECT_EQ(t[2], kMax);
  EXPECT_EQ(t[0], 2500);  // 0.05 x kMax over the two opportunistic instances
  EXPECT_EQ(t[3], 2500);
  EXPECT_DOUBLE_EQ((*c)->reference(), 60000);  // both replicas count in the signal
  // Without a lookup only the lead is production.
  auto plain = Make();
  t = Tick(*plain, {Act(2, false, 100), Act(1, true, 30000), Act(3, true, 30000)});
  EXPECT_EQ(t[1], kMax);
  EXPECT_EQ(t[2], 2500);
}

// Closed loop against a fluid GPU: production wants `demand` of it, the opportunistic job wants
// everything and gets its cap r; production gets min(demand, 1 - r). Production keeps nearly
// all it asks for, the opportunistic job gets the leftovers, and all of the GPU when production
// goes idle.
TEST(PriorityRateControllerTest, ClosedLoopProductionKeepsItsShareOpportunisticGetsLeftovers) {
  auto c = Make();
  double prod_used = 0, opp_used = 0;
  double cap = 1.0;  // before the first tick, caps are the quota limits
  const int kPeriods = 2000;
  for (int i = 0; i < kPeriods; ++i) {
    const double prod = std::min(0.6, 1 - cap);
    prod_used += prod;
    opp_used += cap;
    auto t = Tick(
        *c, {Act(1, true, std::llround(prod * kMax)), Act(2, false, std::llround(cap * kMax))});
    cap = static_cast<double>(t[1]) / kMax;
  }
  EXPECT_GT(prod_used / kPeriods, 0.9 * 0.6);
  EXPECT_GT(opp_used / kPeriods, 0.2);  // leftovers: about 1 - 0.6, minus the back-off sawtooth
  EXPECT_LE(opp_used / kPeriods, 0.5);
  // Production goes idle: the opportunistic job probes up to the whole GPU.
  for (int i = 0; i < 200; ++i) {
    auto t = Tick(*c, {Act(1, true, 0), Act(2, false, std::llround(cap * kMax))});
    cap = static_cast<double>(t[1]) / kMax;
  }
  EXPECT_DOUBLE_EQ(cap, 1.0);
}

TEST(PriorityRateControllerPropertyTest, ProductionAlwaysFullOpportunisticWithinFloorAndRate) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    PriorityRateConfig cfg;
    cfg.floor = 0.01 + 0.01 * (rng() % 5);
    cfg.initial_rate = cfg.floor;
    auto c = Make(cfg);
    for (int period = 0; period < 500; ++period) {
      const int n = 1 + static_cast<int>(rng() % 4);
      std::vector<InstanceActivity> acts;
      for (int i = 0; i < n; ++i) {
        acts.push_back(Act(i + 10 * static_cast<int>(rng() % 2), rng() % 2 == 0,
                           static_cast<int64_t>(rng() % kMax)));
      }
      auto t = Tick(*c, acts);
      int64_t opp = 0;
      int full = 0;
      for (int i = 0; i < n; ++i) {
        if (acts[i].instance == c->production()) {
          ASSERT_EQ(t[i], kMax) << "seed " << seed;
          ++full;
        } else {
          ASSERT_GE(t[i], 1) << "seed " << seed;
          opp += t[i];
        }
      }
      ASSERT_EQ(full, 1) << "seed " << seed;
      ASSERT_GE(c->rate(), cfg.floor);
      ASSERT_LE(c->rate(), 1.0);
      if (n > 1) {
        ASSERT_LE(opp, std::max<int64_t>(n - 1, std::llround(c->rate() * kMax)));
        ASSERT_GE(opp, std::llround(cfg.floor * kMax) - n) << "seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::core
