#include "runtime/loadgen/trace.h"

#include <cmath>
#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

TEST(ParseTraceTest, TimesAreSortedAndCommentsSkipped) {
  absl::StatusOr<Trace> t = ParseTrace("# a comment\ntime_s\n0.5\n\n0.25\r\n2\n", "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->format, Trace::Format::kTimes);
  EXPECT_THAT(t->times, ::testing::ElementsAre(absl::Milliseconds(250), absl::Milliseconds(500),
                                               absl::Seconds(2)));
  EXPECT_EQ(TraceLength(*t), absl::Milliseconds(2001));
  EXPECT_EQ(Arrivals(*t, 1, TraceLength(*t)).size(), 3u);
}

TEST(ParseTraceTest, Rates) {
  absl::StatusOr<Trace> t = ParseTrace("second,rps\n0, 10\n1,0\n5,2.5\n", "r.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rates.size(), 3u);
  EXPECT_EQ(t->rates[2].second, 5);
  EXPECT_DOUBLE_EQ(t->rates[2].rps, 2.5);
  EXPECT_EQ(TraceLength(*t), absl::Seconds(6));
}

struct BadCase {
  const char* text;
  const char* where;    // "file:line:column:"
  const char* message;  // part of the message
};

TEST(ParseTraceTest, BadLinesNameFileLineAndColumn) {
  const BadCase cases[] = {
      {"time,rps\n", "b.csv:1:1:", "header must be"},
      {"", "b.csv:1:1:", "empty trace"},
      {"time_s\n", "b.csv:1:1:", "no rows"},
      {"time_s\n1\nabc\n", "b.csv:3:1:", "'abc' is not a number"},
      {"time_s\n  -1\n", "b.csv:2:3:", "must be >= 0"},
      {"time_s\n1,2\n", "b.csv:2:3:", "expected 1 field(s), got 2"},
      {"second,rps\n0,1\n0,2\n", "b.csv:3:1:", "must increase"},
      {"second,rps\n1.5,1\n", "b.csv:2:1:", "integer >= 0"},
      {"second,rps\n0, nan\n", "b.csv:2:4:", "not a number"},
      {"second,rps\n0,-2\n", "b.csv:2:3:", "rps: must be >= 0"},
      {"# c\nsecond,rps\n0\n", "b.csv:3:1:", "expected 2 field(s), got 1"},
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<Trace> t = ParseTrace(c.text, "b.csv");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()), ::testing::StartsWith(c.where)) << c.text;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(ParseTraceTest, MissingFileIsNotFound) {
  absl::StatusOr<Trace> t = LoadTrace("/nonexistent/trace.csv");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("/nonexistent/trace.csv"));
}

TEST(ArrivalsTest, TimesAreCutAtTheLimit) {
  absl::StatusOr<Trace> t = ParseTrace("time_s\n0\n1\n2\n3\n", "t.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(Arrivals(*t, 1, absl::Seconds(2)).size(), 2u);
  EXPECT_EQ(Arrivals(*t, 1, absl::Seconds(10)).size(), 4u);
}

// Poisson counts: over many seeds, each second's count has mean ~ rps and variance ~ rps, every
// arrival lies inside its second, and the schedule is sorted and repeatable per seed.
TEST(ArrivalsTest, PoissonCountsPerSecondOnSeededRng) {
  const double rps[] = {0.0, 3.0, 40.0};
  Trace trace;
  trace.format = Trace::Format::kRates;
  trace.rates = {{0, rps[0]}, {1, rps[1]}, {2, rps[2]}};
  const int kSeeds = 2000;
  double sum[3] = {0, 0, 0}, sum_sq[3] = {0, 0, 0};
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    const std::vector<absl::Duration> a = Arrivals(trace, seed, absl::Seconds(3));
    ASSERT_EQ(a, Arrivals(trace, seed, absl::Seconds(3))) << "seed " << seed;
    ASSERT_TRUE(std::is_sorted(a.begin(), a.end())) << "seed " << seed;
    int count[3] = {0, 0, 0};
    for (absl::Duration t : a) {
      ASSERT_GE(t, absl::ZeroDuration()) << "seed " << seed;
      ASSERT_LT(t, absl::Seconds(3)) << "seed " << seed;
      ++count[static_cast<int>(absl::ToInt64Seconds(t))];
    }
    for (int s = 0; s < 3; ++s) {
      sum[s] += count[s];
      sum_sq[s] += static_cast<double>(count[s]) * count[s];
    }
  }
  for (int s = 0; s < 3; ++s) {
    const double mean = sum[s] / kSeeds;
    const double var = sum_sq[s] / kSeeds - mean * mean;
    // Standard error of the mean is sqrt(rps / kSeeds); 5 of them is far outside chance.
    const double tol = 5 * std::sqrt(std::max(rps[s], 1.0) / kSeeds);
    EXPECT_NEAR(mean, rps[s], tol) << "second " << s;
    EXPECT_NEAR(var, rps[s], 0.15 * rps[s] + tol) << "second " << s;
  }
  EXPECT_NE(Arrivals(trace, 1, absl::Seconds(3)), Arrivals(trace, 2, absl::Seconds(3)));
}

TEST(ArrivalsTest, RatesStopAtTheLimitInsideASecond) {
  Trace trace;
  trace.format = Trace::Format::kRates;
  trace.rates = {{0, 50.0}, {1, 50.0}};
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    for (absl::Duration t : Arrivals(trace, seed, absl::Milliseconds(1500))) {
      ASSERT_LT(t, absl::Milliseconds(1500)) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace sluice::runtime
