// Tests of the synthetic generators: determinism, seed derivation, Poisson and Gamma statistics,
// horizon and offset handling, and the portable RNG.
#include <cmath>
#include <set>

#include "gtest/gtest.h"

#include "sim/workload/arrivals.h"
#include "sim/workload/random.h"
#include "sim/workload/testing/fixtures.h"

namespace sluice::sim {
namespace {

using testing::Drain;
using testing::Gaps;

const absl::Time kStart = absl::FromUnixSeconds(1000);

struct Moments {
  double mean = 0;
  double cv = 0;
};

Moments MomentsOf(const std::vector<double>& xs) {
  double sum = 0;
  for (double x : xs) {
    sum += x;
  }
  const double mean = sum / xs.size();
  double ss = 0;
  for (double x : xs) {
    ss += (x - mean) * (x - mean);
  }
  return {mean, std::sqrt(ss / (xs.size() - 1)) / mean};
}

WorkloadSpec Poisson(double rate) {
  WorkloadSpec s;
  s.kind = WorkloadKind::kPoisson;
  s.rate_rps = rate;
  return s;
}

WorkloadSpec Gamma(double rate, double cv) {
  WorkloadSpec s;
  s.kind = WorkloadKind::kGamma;
  s.rate_rps = rate;
  s.cv = cv;
  return s;
}

std::vector<Arrival> Generate(const WorkloadSpec& spec, uint64_t seed, absl::Duration horizon) {
  auto source = MakeArrivalSource(spec, seed, kStart, horizon);
  EXPECT_TRUE(source.ok()) << source.status();
  if (!source.ok()) {
    return {};
  }
  return Drain(**source);
}

std::vector<absl::Time> Times(const std::vector<Arrival>& arrivals) {
  std::vector<absl::Time> t;
  t.reserve(arrivals.size());
  for (const Arrival& a : arrivals) {
    t.push_back(a.at);
  }
  return t;
}

TEST(DeriveSeedTest, DeterministicAndDistinctPerStream) {
  EXPECT_EQ(DeriveSeed(7, 3), DeriveSeed(7, 3));
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (uint64_t stream = 0; stream < 50; ++stream) {
      seen.insert(DeriveSeed(seed, stream));
    }
  }
  EXPECT_EQ(seen.size(), 20u * 50u);
  EXPECT_NE(DeriveSeed(1, 2), DeriveSeed(2, 1));
}

TEST(DeriveSeedTest, SplitMix64KnownAnswer) {
  // First output of the reference SplitMix64 generator seeded with 0 (Vigna's splitmix64.c).
  EXPECT_EQ(SplitMix64(0), 0xe220a8397b1dcdafULL);
}

TEST(GeneratorTest, SameSeedSameSequenceDifferentSeedDifferent) {
  for (const WorkloadSpec& spec : {Poisson(20), Gamma(20, 3)}) {
    const auto a = Times(Generate(spec, 11, absl::Seconds(50)));
    const auto b = Times(Generate(spec, 11, absl::Seconds(50)));
    const auto c = Times(Generate(spec, 12, absl::Seconds(50)));
    ASSERT_GT(a.size(), 100u);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
  }
}

// Pins the generated streams: a change here breaks reproducibility of published experiments.
TEST(GeneratorTest, StreamsArePinned) {
  const auto p = Generate(Poisson(10), 42, absl::Seconds(1));
  const auto g = Generate(Gamma(10, 2), 42, absl::Seconds(1));
  ASSERT_GE(p.size(), 3u);
  ASSERT_GE(g.size(), 3u);
  std::vector<int64_t> got;
  for (const auto* v : {&p, &g}) {
    for (int i = 0; i < 3; ++i) {
      got.push_back(absl::ToInt64Nanoseconds((*v)[i].at - kStart));
    }
  }
  // The Poisson values agree with an independent -log(1 - u) / rate over std::mt19937_64(42).
  EXPECT_EQ(got, (std::vector<int64_t>{140713209, 242609638, 382100857, 622711296, 758645897,
                                       763154937}));
}

TEST(GeneratorTest, ArrivalsAreOrderedAndInsideTheHorizon) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (const WorkloadSpec& spec : {Poisson(30), Gamma(30, 0.5), Gamma(30, 6)}) {
      const auto arrivals = Generate(spec, seed, absl::Seconds(20));
      for (size_t i = 0; i < arrivals.size(); ++i) {
        ASSERT_GE(arrivals[i].at, kStart) << "seed " << seed;
        ASSERT_LT(arrivals[i].at, kStart + absl::Seconds(20)) << "seed " << seed;
        if (i > 0) {
          ASSERT_LE(arrivals[i - 1].at, arrivals[i].at) << "seed " << seed;
        }
      }
    }
  }
}

TEST(GeneratorTest, ExhaustedSourceStaysExhausted) {
  auto source = MakeArrivalSource(Poisson(100), 1, kStart, absl::Seconds(1));
  ASSERT_TRUE(source.ok());
  Drain(**source);
  EXPECT_FALSE((*source)->Next().has_value());
  EXPECT_FALSE((*source)->Next().has_value());
}

TEST(GeneratorTest, ZeroRateAndKindNoneYieldNothing) {
  EXPECT_TRUE(Generate(Poisson(0), 1, absl::Seconds(100)).empty());
  EXPECT_TRUE(Generate(Gamma(0, 2), 1, absl::Seconds(100)).empty());
  EXPECT_TRUE(Generate(WorkloadSpec{}, 1, absl::Seconds(100)).empty());
}

TEST(GeneratorTest, PoissonMeanRateAndUnitCv) {
  const double rate = 50;
  const absl::Duration horizon = absl::Seconds(4000);  // ~200k arrivals
  auto source = MakeArrivalSource(Poisson(rate), 2024, kStart, horizon);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ((*source)->MeanRate(), rate);
  const auto arrivals = Drain(**source);
  // Count ~ Poisson(200000): sd 0.22 %; 1 % is > 4 sd.
  EXPECT_NEAR(arrivals.size() / absl::ToDoubleSeconds(horizon), rate, 0.01 * rate);
  const Moments m = MomentsOf(Gaps(arrivals));
  EXPECT_NEAR(m.mean, 1 / rate, 0.01 / rate);
  EXPECT_NEAR(m.cv, 1.0, 0.02);  // sd of the estimate ~0.3 %
}

class GammaCvTest : public ::testing::TestWithParam<double> {};

TEST_P(GammaCvTest, RngGammaMomentsMatchShapeAndScale) {
  const double cv = GetParam();
  const double k = 1 / (cv * cv);
  Rng rng(77);
  std::vector<double> xs(1'000'000);
  for (double& x : xs) {
    x = rng.Gamma(k, 2.0 / k);  // mean 2
  }
  const Moments m = MomentsOf(xs);
  // For cv = 6 the sample CV has a relative sd of ~0.7 % at 1e6 draws; allow ~4 sd.
  EXPECT_NEAR(m.mean, 2.0, 0.03 * 2.0) << "cv " << cv;
  EXPECT_NEAR(m.cv, cv, 0.03 * cv) << "cv " << cv;
}

TEST_P(GammaCvTest, SourceInterArrivalsHaveTargetCvAndRate) {
  const double cv = GetParam();
  const double rate = 100;
  const auto arrivals = Generate(Gamma(rate, cv), 5, absl::Seconds(5000));  // ~500k arrivals
  const Moments m = MomentsOf(Gaps(arrivals));
  EXPECT_NEAR(m.mean, 1 / rate, 0.03 / rate) << "cv " << cv;
  EXPECT_NEAR(m.cv, cv, 0.04 * cv) << "cv " << cv;
}

INSTANTIATE_TEST_SUITE_P(Cvs, GammaCvTest, ::testing::Values(1.0, 2.0, 4.0, 6.0));

TEST(GeneratorTest, StartOffsetShiftsTheGammaProcess) {
  WorkloadSpec spec = Gamma(10, 2);
  const auto full = Generate(spec, 9, absl::Seconds(100));
  spec.start_offset = absl::Seconds(30);
  const auto shifted = Generate(spec, 9, absl::Seconds(70));
  // Same stream, first 30 s dropped, the rest moved 30 s earlier.
  std::vector<absl::Time> expected;
  for (const Arrival& a : full) {
    if (a.at >= kStart + absl::Seconds(30)) {
      expected.push_back(a.at - absl::Seconds(30));
    }
  }
  const auto got = Times(shifted);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(absl::AbsDuration(got[i] - expected[i]), absl::Nanoseconds(1)) << i;
  }
}

TEST(RngTest, UniformIsInRangeAndExponentialPositive) {
  Rng rng(3);
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ASSERT_GT(rng.Exponential(1.0), 0.0);
  }
}

}  // namespace
}  // namespace sluice::sim
