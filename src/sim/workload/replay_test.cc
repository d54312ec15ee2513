// Tests of file-driven workloads: RPS series, request traces (both timestamp forms, the real
// Azure LLM code trace when present), Azure Functions rows, xz input and malformed files.
#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "common/status.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/testing/fixtures.h"
#include "sim/workload/trace_readers.h"

namespace sluice::sim {
namespace {

using testing::Drain;
using testing::FixtureDir;
using ::testing::HasSubstr;
using testing::WriteFixture;

const absl::Time kStart = absl::FromUnixSeconds(500);

WorkloadSpec FileSpec(WorkloadKind kind, const std::string& path, double scale = 1) {
  WorkloadSpec s;
  s.kind = kind;
  s.path = path;
  s.scale = scale;
  s.source_file = "exp.yaml";
  s.source_line = 4;
  return s;
}

absl::StatusOr<std::vector<Arrival>> Replay(const WorkloadSpec& spec,
                                            absl::Duration horizon = absl::InfiniteDuration(),
                                            uint64_t seed = 1) {
  SLUICE_ASSIGN_OR_RETURN(auto source, MakeArrivalSource(spec, seed, kStart, horizon));
  return Drain(*source);
}

// Arrivals per whole bucket of `width` after kStart.
std::vector<int> CountPerBucket(const std::vector<Arrival>& arrivals, absl::Duration width,
                                int buckets) {
  std::vector<int> counts(buckets);
  for (const Arrival& a : arrivals) {
    const int64_t b = (a.at - kStart) / width;
    if (b >= 0 && b < buckets) {
      ++counts[b];
    }
  }
  return counts;
}

TEST(RpsSeriesTest, CountsPerSecondAreRoundedValueTimesScale) {
  const std::vector<double> values = {0.8, 1.5, 2.5, 0, 3.14159, 0.04, 12.05};
  const std::string path =
      WriteFixture(FixtureDir(), "series.txt", absl::StrCat(absl::StrJoin(values, "\n"), "\n\n"));
  for (ArrivalSpread spread : {ArrivalSpread::kEven, ArrivalSpread::kUniform}) {
    WorkloadSpec spec = FileSpec(WorkloadKind::kRpsSeries, path, 10);
    spec.spread = spread;
    const auto arrivals = Replay(spec);
    ASSERT_TRUE(arrivals.ok()) << arrivals.status();
    std::vector<int> expected;
    expected.reserve(values.size());
    for (double v : values) {
      expected.push_back(static_cast<int>(std::lround(v * 10)));
    }
    EXPECT_EQ(CountPerBucket(*arrivals, absl::Seconds(1), values.size()), expected);
    int total = 0;
    for (int e : expected) {
      total += e;
    }
    EXPECT_EQ(static_cast<int>(arrivals->size()), total);
  }
}

TEST(RpsSeriesTest, EvenSpreadPlacesMidpointsAndRespectsHorizon) {
  const std::string path = WriteFixture(FixtureDir(), "s.txt", "0.4\n0.2\n1");
  const auto arrivals = Replay(FileSpec(WorkloadKind::kRpsSeries, path, 10), absl::Seconds(2));
  ASSERT_TRUE(arrivals.ok()) << arrivals.status();
  ASSERT_EQ(arrivals->size(), 6u);  // 4 + 2; the third second is past the horizon
  EXPECT_EQ((*arrivals)[0].at, kStart + absl::Milliseconds(125));
  EXPECT_EQ((*arrivals)[3].at, kStart + absl::Milliseconds(875));
  EXPECT_EQ((*arrivals)[4].at, kStart + absl::Milliseconds(1250));
}

TEST(RpsSeriesTest, PoissonSpreadMatchesTheSeriesOnAverage) {
  // 200 seconds alternating 3 and 7, scaled by 100: expected 300 and 700 per second.
  std::string series;
  for (int i = 0; i < 200; ++i) {
    absl::StrAppend(&series, i % 2 ? "7\n" : "3\n");
  }
  const std::string path = WriteFixture(FixtureDir(), "p.txt", series);
  WorkloadSpec spec = FileSpec(WorkloadKind::kRpsSeries, path, 100);
  spec.spread = ArrivalSpread::kPoisson;
  auto source = MakeArrivalSource(spec, 3, kStart, absl::InfiniteDuration());
  ASSERT_TRUE(source.ok());
  EXPECT_DOUBLE_EQ((*source)->MeanRate(), 500);
  const auto counts = CountPerBucket(Drain(**source), absl::Seconds(1), 200);
  double odd = 0, even = 0;
  for (int i = 0; i < 200; ++i) {
    (i % 2 ? odd : even) += counts[i];
  }
  EXPECT_NEAR(even / 100, 300, 6);  // sd of the mean ~1.7
  EXPECT_NEAR(odd / 100, 700, 9);   // sd ~2.6
}

TEST(RpsSeriesTest, StartOffsetSkipsSecondsAndMeanRateCoversTheWindow) {
  const std::string path = WriteFixture(FixtureDir(), "s.txt", "1\n2\n3\n4\n");
  WorkloadSpec spec = FileSpec(WorkloadKind::kRpsSeries, path, 1);
  spec.start_offset = absl::Seconds(2);
  auto source = MakeArrivalSource(spec, 1, kStart, absl::InfiniteDuration());
  ASSERT_TRUE(source.ok());
  EXPECT_DOUBLE_EQ((*source)->MeanRate(), 3.5);
  const auto arrivals = Drain(**source);
  EXPECT_EQ(CountPerBucket(arrivals, absl::Seconds(1), 2), (std::vector<int>{3, 4}));
}

TEST(RpsSeriesTest, RealDiluSeriesWhenPresent) {
  const std::string path = testing::SharedDataDir() + "/dilu-artifacts/workloads/bursty.txt";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " absent";
  }
  auto source = MakeArrivalSource(FileSpec(WorkloadKind::kRpsSeries, path, 10), 1, kStart,
                                  absl::InfiniteDuration());
  ASSERT_TRUE(source.ok()) << source.status();
  // SOURCE.md: 858 lines, mean 5.686 -> ~56.9 requests/s after x10.
  EXPECT_NEAR((*source)->MeanRate(), 56.86, 0.1);
  const auto arrivals = Drain(**source);
  EXPECT_LT(arrivals.back().at, kStart + absl::Seconds(858));
}

TEST(RpsSeriesTest, MalformedLinesNameFileAndLine) {
  const std::string dir = FixtureDir();
  const struct {
    const char* text;
    const char* where;
  } cases[] = {{"1\n2\nabc\n", "bad.txt:3"},
               {"1\n-2\n", "bad.txt:2"},
               {"1\n\n2\n", "bad.txt:2"},
               {"1\nnan\n", "bad.txt:2"},
               {"", "bad.txt"}};
  for (const auto& c : cases) {
    const std::string path = WriteFixture(dir, "bad.txt", c.text);
    const auto r = Replay(FileSpec(WorkloadKind::kRpsSeries, path));
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.where)) << c.text;
  }
}

TEST(FileErrorsTest, MissingOrUnreadableFileNamesTheSpec) {
  const std::string dir = FixtureDir();
  auto r = Replay(FileSpec(WorkloadKind::kRpsSeries, dir + "/nope.txt"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("exp.yaml:4"));
  EXPECT_THAT(r.status().message(), HasSubstr("nope.txt"));
  r = Replay(FileSpec(WorkloadKind::kRequestTrace, dir));  // a directory
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("directory"));
}

TEST(FileErrorsTest, ImpossibleSpecValuesAreRejected) {
  const std::string path = WriteFixture(FixtureDir(), "s.txt", "1\n");
  WorkloadSpec spec = FileSpec(WorkloadKind::kRpsSeries, path, -1);
  EXPECT_FALSE(Replay(spec).ok());
  spec = FileSpec(WorkloadKind::kRequestTrace, path, 0);
  EXPECT_FALSE(Replay(spec).ok());
  spec.kind = WorkloadKind::kGamma;
  spec.rate_rps = 1;
  spec.cv = 0;
  EXPECT_FALSE(Replay(spec, absl::Seconds(1)).ok());
  spec.cv = 1;
  EXPECT_FALSE(Replay(spec, absl::Seconds(-1)).ok());
}

}  // namespace
}  // namespace sluice::sim
