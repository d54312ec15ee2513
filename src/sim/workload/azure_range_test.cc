// Azure Functions files that carry any contiguous range of minute columns (a slice of a day,
// several days): minute m replays at [60(m-1), 60m) s whatever the file's first column, so a
// slice gives exactly the arrivals of the same minutes of the full day file.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

// A file with minute columns first..last and one row "f" whose minute m holds count(m).
std::string RangeFile(int first, int last, int (*count)(int)) {
  std::string out = "HashOwner,HashApp,HashFunction,Trigger";
  for (int m = first; m <= last; ++m)
    absl::StrAppend(&out, ",", m);
  absl::StrAppend(&out, "\no,a,f,timer");
  for (int m = first; m <= last; ++m)
    absl::StrAppend(&out, ",", count(m));
  return out + "\n";
}

int Pattern(int minute) { return minute % 7; }

std::vector<Arrival> Replay(const std::string& path, absl::Duration offset,
                            absl::Duration horizon) {
  WorkloadSpec spec;
  spec.kind = WorkloadKind::kAzureFunctions;
  spec.path = path;
  spec.start_offset = offset;
  spec.spread = ArrivalSpread::kUniform;
  auto source = MakeArrivalSource(spec, 3, kStart, horizon);
  EXPECT_TRUE(source.ok()) << source.status();
  return source.ok() ? Drain(**source) : std::vector<Arrival>{};
}

TEST(AzureRangeTest, SliceReturnsCountsFromMinuteOne) {
  auto counts = ParseAzureFunctionsRow(RangeFile(601, 720, Pattern), "s.csv", "f");
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_EQ(counts->size(), 720u);
  EXPECT_EQ((*counts)[599], 0);               // minute 600: before the slice
  EXPECT_EQ((*counts)[600], Pattern(601));    // minute 601
  EXPECT_EQ((*counts)[719], Pattern(720));
}

TEST(AzureRangeTest, SliceReplaysLikeTheSameMinutesOfTheDayFile) {
  const std::string dir = FixtureDir();
  const std::string day = WriteFixture(dir, "day.csv", RangeFile(1, 1440, Pattern));
  const std::string slice = WriteFixture(dir, "slice.csv", RangeFile(601, 720, Pattern));
  const absl::Duration offset = absl::Minutes(600);
  const std::vector<Arrival> a = Replay(day, offset, absl::Minutes(120));
  const std::vector<Arrival> b = Replay(slice, offset, absl::Minutes(120));
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a[i].at, b[i].at) << i;
  int want = 0;
  for (int m = 601; m <= 720; ++m)
    want += Pattern(m);
  EXPECT_EQ(static_cast<int>(a.size()), want);
}

TEST(AzureRangeTest, MultiDayFilesAndSingleColumnsAreAccepted) {
  auto two_days = ParseAzureFunctionsRow(RangeFile(1, 2880, Pattern), "w.csv", "");
  ASSERT_TRUE(two_days.ok()) << two_days.status();
  EXPECT_EQ(two_days->size(), 2880u);
  EXPECT_EQ((*two_days)[2879], Pattern(2880));
  auto one = ParseAzureFunctionsRow(RangeFile(5, 5, Pattern), "o.csv", "f");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->size(), 5u);
}

TEST(AzureRangeTest, RowWithTheWrongNumberOfFieldsNamesItsLine) {
  std::string text = RangeFile(10, 12, Pattern);
  text += "o,a,g,http,1,2\n";
  auto r = ParseAzureFunctionsRow(text, "r.csv", "g");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("r.csv:3"));
  EXPECT_THAT(r.status().message(), HasSubstr("expected 7 fields, got 6"));
  auto past = ParseAzureFunctionsRow(RangeFile(kMaxAzureMinute, kMaxAzureMinute + 1, Pattern),
                                     "p.csv", "f");
  ASSERT_FALSE(past.ok());
  EXPECT_THAT(past.status().message(), HasSubstr("numbered from 1 to 20160"));
}

}  // namespace
}  // namespace sluice::sim
