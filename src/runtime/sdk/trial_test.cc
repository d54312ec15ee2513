#include "runtime/sdk/trial.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(TrialTest, ParsesDefaultsAndRejectsOutOfRange) {
  absl::StatusOr<TrialRequest> r = ParseTrialRequest("");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->batch, 1);
  EXPECT_EQ(r->iterations, 1);
  r = ParseTrialRequest(R"({"batch": 8, "iterations": 5})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->batch, 8);
  EXPECT_EQ(r->iterations, 5);
  for (const char* bad :
       {R"({"batch": 0})", R"({"batch": 1.5})", R"({"iterations": 100000})", "[1]", "{"}) {
    EXPECT_FALSE(ParseTrialRequest(bad).ok()) << bad;
  }
  EXPECT_NE(ParseTrialRequest(R"({"batch": 0})").status().message().find("batch"),
            std::string::npos);
}

TEST(TrialTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(MedianLatency({absl::Milliseconds(9), absl::Milliseconds(1), absl::Milliseconds(5)}),
            absl::Milliseconds(5));
  EXPECT_EQ(MedianLatency({absl::Milliseconds(4), absl::Milliseconds(1), absl::Milliseconds(2),
                           absl::Milliseconds(100)}),
            absl::Milliseconds(3));
}

TEST(TrialTest, ThroughputIsBatchOverMedianLatency) {
  TrialSummary s = SummarizeTrial(
      8, {absl::Milliseconds(20), absl::Milliseconds(10), absl::Milliseconds(500)}, 1234);
  EXPECT_DOUBLE_EQ(s.latency_ms, 20);
  EXPECT_DOUBLE_EQ(s.throughput, 400);  // 8 items / 20 ms
  EXPECT_EQ(s.memory_bytes, 1234);
  nlohmann::json j = TrialJson(s, {8, 3});
  EXPECT_EQ(j["iterations"], 3);
  EXPECT_DOUBLE_EQ(j["throughput"].get<double>(), 400);
  EXPECT_EQ(SummarizeTrial(1, {absl::ZeroDuration()}, 0).throughput, 0);
}

// Property: the median lies between the minimum and maximum and is invariant under shuffling.
TEST(TrialTest, MedianIsOrderInvariantProperty) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    std::vector<absl::Duration> v(1 + rng() % 20);
    for (absl::Duration& d : v) {
      d = absl::Microseconds(rng() % 100000);
    }
    const absl::Duration m = MedianLatency(v);
    std::shuffle(v.begin(), v.end(), rng);
    ASSERT_EQ(MedianLatency(v), m) << "seed " << seed;
    ASSERT_GE(m, *std::min_element(v.begin(), v.end())) << "seed " << seed;
    ASSERT_LE(m, *std::max_element(v.begin(), v.end())) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::runtime
