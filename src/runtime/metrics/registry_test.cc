// Tests for the Prometheus registry: golden exposition text, escaping, buckets, names, threads.
#include "runtime/metrics/registry.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

TEST(RegistryTest, RendersCounterGaugeAndHistogramExactly) {
  Registry registry;
  auto requests = registry.AddCounter("requests_total", "Requests served.", {"function", "code"});
  ASSERT_TRUE(requests.ok()) << requests.status();
  auto queue = registry.AddGauge("queue_length", "Requests waiting.", {});
  ASSERT_TRUE(queue.ok()) << queue.status();
  auto latency = registry.AddHistogram("latency_seconds", "End-to-end latency.", {"function"},
                                       {0.125, 0.5, 1});
  ASSERT_TRUE(latency.ok()) << latency.status();

  (*(*requests)->WithLabels({"bert", "429"}))->Inc();
  (*(*requests)->WithLabels({"bert", "200"}))->Inc(3);
  (*(*queue)->WithLabels({}))->Set(2.5);
  Histogram* bert = *(*latency)->WithLabels({"bert"});
  for (double v : {0.0625, 0.125, 0.75, 2.0}) bert->Observe(v);

  EXPECT_EQ(registry.Render(),
            "# HELP latency_seconds End-to-end latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{function=\"bert\",le=\"0.125\"} 2\n"
            "latency_seconds_bucket{function=\"bert\",le=\"0.5\"} 2\n"
            "latency_seconds_bucket{function=\"bert\",le=\"1\"} 3\n"
            "latency_seconds_bucket{function=\"bert\",le=\"+Inf\"} 4\n"
            "latency_seconds_sum{function=\"bert\"} 2.9375\n"
            "latency_seconds_count{function=\"bert\"} 4\n"
            "# HELP queue_length Requests waiting.\n"
            "# TYPE queue_length gauge\n"
            "queue_length 2.5\n"
            "# HELP requests_total Requests served.\n"
            "# TYPE requests_total counter\n"
            "requests_total{function=\"bert\",code=\"200\"} 3\n"
            "requests_total{function=\"bert\",code=\"429\"} 1\n");
}

TEST(RegistryTest, UnlabelledHistogramAndEmptyFamilies) {
  Registry registry;
  auto h = registry.AddHistogram("cold_start_seconds", "Cold starts.", {}, {1});
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_TRUE(registry.AddGauge("instances", "Instances.", {"function"}).ok());
  EXPECT_EQ(registry.Render(),
            "# HELP cold_start_seconds Cold starts.\n"
            "# TYPE cold_start_seconds histogram\n"
            "cold_start_seconds_bucket{le=\"1\"} 0\n"
            "cold_start_seconds_bucket{le=\"+Inf\"} 0\n"
            "cold_start_seconds_sum 0\n"
            "cold_start_seconds_count 0\n");
}

TEST(RegistryTest, EscapesLabelValuesAndHelp) {
  Registry registry;
  auto g = registry.AddGauge("share", "SM share \\ of\nthe GPU \"x\".", {"model"});
  ASSERT_TRUE(g.ok()) << g.status();
  (*(*g)->WithLabels({"a\\b\"c\nd"}))->Set(-1);
  EXPECT_EQ(registry.Render(),
            "# HELP share SM share \\\\ of\\nthe GPU \"x\".\n"
            "# TYPE share gauge\n"
            "share{model=\"a\\\\b\\\"c\\nd\"} -1\n");
}

TEST(HistogramTest, BucketsAreCumulativeAndInclusive) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> dist(-4.0, 2.5);
  const std::vector<double>& bounds = DefaultLatencyBucketsSeconds();
  Histogram histogram(bounds);
  std::vector<double> values;
  for (int i = 0; i < 2000; ++i) values.push_back(dist(rng));
  values.push_back(bounds.front());  // Exactly on a bound: counts in that bucket (le is <=).
  values.push_back(bounds.back() * 2);
  double sum = 0;
  for (double v : values) {
    histogram.Observe(v);
    sum += v;
  }
  const Histogram::Snapshot snap = histogram.Take();
  ASSERT_EQ(snap.cumulative_counts.size(), bounds.size() + 1);
  for (size_t i = 0; i < bounds.size(); ++i) {
    uint64_t expected = 0;
    for (double v : values) expected += v <= bounds[i] ? 1 : 0;
    EXPECT_EQ(snap.cumulative_counts[i], expected) << "le=" << bounds[i];
  }
  EXPECT_EQ(snap.cumulative_counts.back(), values.size());
  EXPECT_EQ(snap.count, values.size());
  EXPECT_NEAR(snap.sum, sum, 1e-9 * sum);
}

TEST(RegistryTest, RejectsInvalidNamesWithTheName) {
  Registry r;
  for (const char* bad : {"", "1abc", "a-b", "a b", "é"}) {
    absl::Status s = r.AddGauge(bad, "h", {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("'", bad, "'")));
  }
  EXPECT_TRUE(r.AddGauge("ns:sub_metric9", "h", {"_ok", "Label9"}).ok());
  for (const char* bad : {"0x", "a:b", "a-b", "__reserved", ""}) {
    absl::Status s = r.AddGauge("g_total", "h", {bad}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("'", bad, "'")));
  }
  absl::Status no_total = r.AddCounter("requests", "h", {}).status();
  EXPECT_EQ(no_total.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_total.message(), HasSubstr("'requests'"));
  EXPECT_EQ(r.AddGauge("dup", "h", {"a", "a"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.AddHistogram("h1", "h", {"le"}, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const std::vector<double>& bounds :
       std::vector<std::vector<double>>{{}, {1, 1}, {2, 1}, {1, INFINITY}, {NAN}}) {
    EXPECT_EQ(r.AddHistogram("h2", "h", {}, bounds).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(RegistryTest, RejectsDuplicateAndCollidingNames) {
  Registry r;
  ASSERT_TRUE(r.AddHistogram("rtt_seconds", "h", {}, {1}).ok());
  EXPECT_EQ(r.AddGauge("rtt_seconds", "h", {}).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.AddGauge("rtt_seconds_count", "h", {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(r.AddGauge("x_sum", "h", {}).ok());
  EXPECT_EQ(r.AddHistogram("x", "h", {}, {1}).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(r.AddGauge("x", "h", {}).ok());  // A failed Add claims nothing.
}

TEST(FamilyTest, WrongLabelCountIsAnErrorAndSeriesAreShared) {
  Registry r;
  auto f = r.AddCounter("c_total", "h", {"a", "b"});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->WithLabels({"x"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*(*f)->WithLabels({"x", "y"}), *(*f)->WithLabels({"x", "y"}));
  EXPECT_NE(*(*f)->WithLabels({"x", "y"}), *(*f)->WithLabels({"x", "z"}));
}

TEST(CounterTest, IsMonotone) {
  Counter c;
  c.Inc(2);
  c.Inc(-1);
  c.Inc(NAN);
  EXPECT_EQ(c.Value(), 2);
}

TEST(ExpositionTest, FloatsRoundTrip) {
  EXPECT_EQ(FormatDouble(INFINITY), "+Inf");
  EXPECT_EQ(FormatDouble(-INFINITY), "-Inf");
  EXPECT_EQ(FormatDouble(NAN), "NaN");
  EXPECT_EQ(FormatDouble(0.1), "0.1");
  EXPECT_EQ(FormatDouble(3), "3");
  for (double v : {0.1 + 0.2, 1.0 / 3, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.125,
                   -2.5e-7}) {
    const std::string text = FormatDouble(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
}

TEST(RegistryTest, ConcurrentUpdatesSumExactly) {
  Registry r;
  auto counters = r.AddCounter("hits_total", "h", {"worker"});
  auto gauge = r.AddGauge("inflight", "h", {});
  auto hist = r.AddHistogram("op_seconds", "h", {}, DefaultLatencyBucketsSeconds());
  ASSERT_TRUE(counters.ok() && gauge.ok() && hist.ok());
  constexpr int kThreads = 4;
  constexpr int kIters = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        // Alternate between a shared series and a per-thread one, looked up every time.
        (*(*counters)->WithLabels({i % 2 == 0 ? "shared" : absl::StrCat("w", t)}))->Inc();
        (*(*gauge)->WithLabels({}))->Inc();
        (*(*hist)->WithLabels({}))->Observe(0.25);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 50; ++i) EXPECT_THAT(r.Render(), HasSubstr("# TYPE hits_total counter"));
  });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ((*(*counters)->WithLabels({"shared"}))->Value(), kThreads * kIters / 2);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ((*(*counters)->WithLabels({absl::StrCat("w", t)}))->Value(), kIters / 2);
  }
  EXPECT_EQ((*(*gauge)->WithLabels({}))->Value(), kThreads * kIters);
  const Histogram::Snapshot snap = (*(*hist)->WithLabels({}))->Take();
  EXPECT_EQ(snap.count, uint64_t{kThreads * kIters});
  EXPECT_EQ(snap.sum, 0.25 * kThreads * kIters);
}

}  // namespace
}  // namespace sluice::runtime
