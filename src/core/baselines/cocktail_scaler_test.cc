// Tests for CocktailScaler: reactive fallback on a burst, proactive provisioning ahead of a
// ramp with its over-provisioning, scale-in only after keep_alive, config errors.
#include "core/baselines/cocktail_scaler.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

CocktailConfig Config() {
  CocktailConfig c;
  c.capacity_rps = 10;
  return c;
}

LoadSample At(int s, double rps, int queued = 0) {
  LoadSample x;
  x.at = kT0 + absl::Seconds(s);
  x.rps = rps;
  x.queued = queued;
  return x;
}

TEST(CocktailScaler, BurstScalesOutReactivelyAtOnce) {
  auto s = *CocktailScaler::Create(Config());
  for (int i = 0; i < 20; ++i)
    s->Observe(At(i, 10));
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(19)), 2);  // proactive: 10 x 1.1 -> 2
  s->Observe(At(20, 75));                             // misprediction: the forecast said 10
  EXPECT_EQ(s->reactive(), 8);
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(20)), 8);
}

TEST(CocktailScaler, RampIsProvisionedAheadWithOverProvisioning) {
  auto s = *CocktailScaler::Create(Config());
  for (int i = 0; i <= 60; ++i)
    s->Observe(At(i, 10 + i));  // +1 rps per second
  // The forecast looks 10 s ahead of the latest interval's peak and adds 10 %.
  EXPECT_GT(s->forecast_rps(), 65);
  EXPECT_GT(s->proactive(), s->reactive());
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(60)), s->proactive());
}

TEST(CocktailScaler, ScalesInOnlyAfterKeepAlive) {
  auto s = *CocktailScaler::Create(Config());
  s->Observe(At(0, 80));
  EXPECT_EQ(s->Desired(kT0), 8);
  for (int i = 1; i <= 200; ++i) {
    s->Observe(At(i, 0));
    const int d = s->Desired(kT0 + absl::Seconds(i));
    if (i < 60) {
      EXPECT_GE(d, 8) << i;  // held for keep_alive (60 s) after the last need
    }
  }
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(200)), 0);
  EXPECT_EQ(s->NextWakeup(), absl::InfiniteFuture());
}

TEST(CocktailScaler, RejectsBadConfigNamingTheField) {
  CocktailConfig c = Config();
  c.alpha = 0;
  EXPECT_NE(CocktailScaler::Create(c).status().message().find("alpha"), std::string::npos);
  c = Config();
  c.over_provision = -1;
  EXPECT_NE(CocktailScaler::Create(c).status().message().find("over_provision"), std::string::npos);
}

}  // namespace
}  // namespace sluice::core
