// Tests of request-trace and Azure Functions replay, and of xz-compressed inputs.
#include <lzma.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "common/status.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/file_io.h"
#include "sim/workload/testing/fixtures.h"
#include "sim/workload/trace_readers.h"

namespace sluice::sim {
namespace {

using testing::Drain;
using testing::FixtureDir;
using ::testing::HasSubstr;
using testing::WriteFixture;

const absl::Time kStart = absl::FromUnixSeconds(500);

WorkloadSpec TraceSpec(const std::string& path, const std::string& ts = "TIMESTAMP",
                       const std::string& prompt = "", const std::string& output = "") {
  WorkloadSpec s;
  s.kind = WorkloadKind::kRequestTrace;
  s.path = path;
  s.timestamp_column = ts;
  s.prompt_tokens_column = prompt;
  s.output_tokens_column = output;
  return s;
}

absl::StatusOr<std::vector<Arrival>> Replay(const WorkloadSpec& spec,
                                            absl::Duration horizon = absl::InfiniteDuration()) {
  SLUICE_ASSIGN_OR_RETURN(auto source, MakeArrivalSource(spec, 1, kStart, horizon));
  return Drain(*source);
}

std::vector<absl::Duration> Offsets(const std::vector<Arrival>& arrivals) {
  std::vector<absl::Duration> d;
  d.reserve(arrivals.size());
  for (const Arrival& a : arrivals) {
    d.push_back(a.at - kStart);
  }
  return d;
}

TEST(RequestTraceTest, NumericSecondsWithTokens) {
  const std::string path = WriteFixture(
      FixtureDir(), "t.csv", "id,t,ctx,gen\r\na,10.5,100,7\r\nb,11.25,20,3\r\nc,13,5,1\r\n");
  WorkloadSpec spec = TraceSpec(path, "t", "ctx", "gen");
  const auto a = Replay(spec);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Offsets(*a), (std::vector<absl::Duration>{absl::ZeroDuration(), absl::Milliseconds(750),
                                                      absl::Milliseconds(2500)}));
  EXPECT_EQ((*a)[0].prompt_tokens, 100);
  EXPECT_EQ((*a)[0].output_tokens, 7);
  EXPECT_EQ((*a)[2].prompt_tokens, 5);
  // scale 2 halves every gap; tokens unchanged.
  spec.scale = 2;
  const auto fast = Replay(spec);
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(Offsets(*fast)[2], absl::Milliseconds(1250));
  EXPECT_EQ((*fast)[1].output_tokens, 3);
}

TEST(RequestTraceTest, WallClockTimestampsRelativeToFirstRow) {
  const std::string path = WriteFixture(FixtureDir(), "t.csv",
                                        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                        "2023-11-16 23:59:59.9799600,4808,10\n"
                                        "2023-11-17 00:00:00.0319600,3180,8\n"
                                        "2023-11-17 00:00:01,1,1\n");
  const auto a = Replay(TraceSpec(path, "TIMESTAMP", "", "GeneratedTokens"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Offsets(*a), (std::vector<absl::Duration>{absl::ZeroDuration(), absl::Milliseconds(52),
                                                      absl::Microseconds(1020040)}));
  EXPECT_EQ((*a)[0].prompt_tokens, 0);  // column not requested
  EXPECT_EQ((*a)[1].output_tokens, 8);
}

TEST(RequestTraceTest, OutOfOrderRowsAreSorted) {
  const std::string path = WriteFixture(FixtureDir(), "t.csv", "TIMESTAMP,n\n5,1\n2,2\n9,3\n2,4\n");
  const auto a = Replay(TraceSpec(path, "TIMESTAMP", "n"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(Offsets(*a), (std::vector<absl::Duration>{absl::ZeroDuration(), absl::ZeroDuration(),
                                                      absl::Seconds(3), absl::Seconds(7)}));
  std::vector<int> order;
  for (const Arrival& x : *a) {
    order.push_back(x.prompt_tokens);
  }
  EXPECT_EQ(order, (std::vector<int>{2, 4, 1, 3}));  // stable among the ties at t = 2
}

TEST(RequestTraceTest, HorizonAndOffsetCutTheWindow) {
  const std::string path =
      WriteFixture(FixtureDir(), "t.csv", "TIMESTAMP\n0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n");
  WorkloadSpec spec = TraceSpec(path);
  spec.start_offset = absl::Seconds(2);
  auto source = MakeArrivalSource(spec, 1, kStart, absl::Seconds(3));
  ASSERT_TRUE(source.ok());
  EXPECT_DOUBLE_EQ((*source)->MeanRate(), 1.0);  // rows at 2, 3, 4 over 3 s
  EXPECT_EQ(
      Offsets(Drain(**source)),
      (std::vector<absl::Duration>{absl::ZeroDuration(), absl::Seconds(1), absl::Seconds(2)}));
}

TEST(RequestTraceTest, MalformedRowsNameFileLineAndColumn) {
  const std::string dir = FixtureDir();
  const struct {
    const char* text;
    const char* want;
  } cases[] = {
      {"TIMESTAMP,ctx\n1,2\nx,3\n", "t.csv:3: field 'TIMESTAMP'"},
      {"TIMESTAMP,ctx\n1,2\n2\n", "t.csv:3: expected at least 2 fields"},
      {"TIMESTAMP,ctx\n1,-2\n", "t.csv:2: field 'ctx'"},
      {"TIMESTAMP,ctx\n1,2.5\n", "t.csv:2: field 'ctx'"},
      {"TIMESTAMP,ctx\n1,2\n2023-01-01 00:00:00,3\n", "t.csv:3: field 'TIMESTAMP'"},
      {"TIMESTAMP,ctx\n2023-01-01 00:00:00,3\n2023-02-30 00:00:00,3\n", "t.csv:3"},
      {"TIMESTAMP,ctx\n1,2\n\n3,4\n", "t.csv:3: blank line"},
      {"time,ctx\n1,2\n", "t.csv:1: field 'TIMESTAMP': column not found"},
      {"TIMESTAMP,ctx\n", "no data rows"},
      {"", "empty file"},
  };
  for (const auto& c : cases) {
    const std::string path = WriteFixture(dir, "t.csv", c.text);
    const auto r = Replay(TraceSpec(path, "TIMESTAMP", "ctx"));
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.text;
  }
  const std::string path = WriteFixture(dir, "t.csv", "TIMESTAMP,ctx\n1,2\n");
  const auto r = Replay(TraceSpec(path, "TIMESTAMP", "ctx", "gen"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("field 'gen': column not found"));
}

TEST(RequestTraceTest, RealAzureLlmCodeTraceWhenPresent) {
  const std::string path =
      testing::SharedDataDir() + "/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " absent";
  }
  auto source = MakeArrivalSource(TraceSpec(path, "TIMESTAMP", "ContextTokens", "GeneratedTokens"),
                                  1, kStart, absl::InfiniteDuration());
  ASSERT_TRUE(source.ok()) << source.status();
  const double rate = (*source)->MeanRate();
  const auto a = Drain(**source);
  ASSERT_EQ(a.size(), 8819u);
  // SOURCE.md: 18:17:03.98 to 19:14:19.93, a span of ~3,436 s, 2.57 req/s; first row 4808/10.
  EXPECT_NEAR(absl::ToDoubleSeconds(a.back().at - a.front().at), 3436, 1);
  EXPECT_NEAR(rate, 2.57, 0.01);
  EXPECT_EQ(a.front().at, kStart);
  EXPECT_EQ(a.front().prompt_tokens, 4808);
  EXPECT_EQ(a.front().output_tokens, 10);
}

// An Azure Functions 2019 day file with the given rows (hash, per-minute counts; minutes not
// given are 0).
std::string AzureFile(const std::vector<std::pair<std::string, std::vector<int>>>& rows) {
  std::string out = "HashOwner,HashApp,HashFunction,Trigger";
  for (int m = 1; m <= kAzureMinutesPerDay; ++m) {
    absl::StrAppend(&out, ",", m);
  }
  out += "\n";
  for (const auto& [hash, counts] : rows) {
    absl::StrAppend(&out, "o1,a1,", hash, ",http");
    for (int m = 0; m < kAzureMinutesPerDay; ++m) {
      absl::StrAppend(&out, ",", m < static_cast<int>(counts.size()) ? counts[m] : 0);
    }
    out += "\n";
  }
  return out;
}

WorkloadSpec AzureSpec(const std::string& path, const std::string& function) {
  WorkloadSpec s;
  s.kind = WorkloadKind::kAzureFunctions;
  s.path = path;
  s.function_id = function;
  return s;
}

TEST(AzureFunctionsTest, SelectedRowReplaysPerMinuteCounts) {
  const std::string path =
      WriteFixture(FixtureDir(), "d01.csv", AzureFile({{"f1", {9, 9}}, {"f2", {3, 0, 120, 1}}}));
  WorkloadSpec spec = AzureSpec(path, "f2");
  spec.scale = 2;
  auto a = Replay(spec, absl::Minutes(3));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<int> per_minute(3);
  for (const Arrival& x : *a) {
    ++per_minute[(x.at - kStart) / absl::Minutes(1)];
  }
  EXPECT_EQ(per_minute, (std::vector<int>{6, 0, 240}));  // the 4th minute is past the horizon
  EXPECT_EQ(Offsets(*a)[0], absl::Seconds(5));           // 6 evenly in 60 s: midpoints
  // Empty function = first row.
  a = Replay(AzureSpec(path, ""));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size(), 18u);
}

TEST(AzureFunctionsTest, PoissonSpreadIsSeededAndNearTheCounts) {
  const std::string path =
      WriteFixture(FixtureDir(), "d01.csv", AzureFile({{"f", std::vector<int>(1440, 600)}}));
  WorkloadSpec spec = AzureSpec(path, "f");
  spec.spread = ArrivalSpread::kPoisson;
  auto s1 = MakeArrivalSource(spec, 4, kStart, absl::InfiniteDuration());
  auto s2 = MakeArrivalSource(spec, 4, kStart, absl::InfiniteDuration());
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_DOUBLE_EQ((*s1)->MeanRate(), 10.0);
  const auto a = Drain(**s1);
  EXPECT_NEAR(a.size(), 864000, 4 * 930);  // Poisson(864000): sd ~930
  const auto b = Drain(**s2);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.back().at, b.back().at);
}

TEST(AzureFunctionsTest, BadFilesNameFileLineAndField) {
  const std::string dir = FixtureDir();
  std::string bad_count = AzureFile({{"f", {1, 2}}});
  bad_count.replace(bad_count.find(",http,1,2,"), 10, ",http,1,x,");
  const struct {
    std::string text;
    std::string function;
    std::string want;
  } cases[] = {
      {"HashOwner,HashApp,HashFunction,Trigger\n", "", "d.csv:1: Azure Functions header"},
      {"HashOwner,HashApp,HashFunction,Trigger,1,3\n", "", "d.csv:1: field '3': minute columns "
       "must be contiguous"},
      {"HashOwner,HashApp,HashFunction,Trigger,0,1\n", "", "d.csv:1: field '0': minute columns "
       "must be numbered from 1"},
      {AzureFile({{"f", {1}}}), "g", "field 'function': no row has HashFunction 'g'"},
      {bad_count, "f", "d.csv:2: field '2'"},
      {AzureFile({}) + "o,a\n", "f", "d.csv:2: expected at least 4"},
      {AzureFile({}), "", "no data rows"},
  };
  for (const auto& c : cases) {
    const auto r = Replay(AzureSpec(WriteFixture(dir, "d.csv", c.text), c.function));
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want));
  }
}

std::string Xz(const std::string& plain) {
  std::string out(plain.size() + 1024, '\0');
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr,
                                    reinterpret_cast<const uint8_t*>(plain.data()), plain.size(),
                                    reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

TEST(FileIoTest, ReadsXzByMagicAndFallsBackToDotXz) {
  const std::string dir = FixtureDir();
  const std::string plain = "TIMESTAMP\n0\n1.5\n";
  WriteFixture(dir, "t.csv.xz", Xz(plain));
  auto r = ReadFileMaybeXz(dir + "/t.csv.xz");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, plain);
  r = ReadFileMaybeXz(dir + "/t.csv");  // absent: t.csv.xz is read
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, plain);
  const auto a = Replay(TraceSpec(dir + "/t.csv"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size(), 2u);
}

TEST(FileIoTest, CorruptXzAndMissingFilesAreErrors) {
  const std::string dir = FixtureDir();
  std::string xz = Xz(std::string(5000, 'a'));
  WriteFixture(dir, "trunc.xz", xz.substr(0, xz.size() / 2));
  EXPECT_EQ(ReadFileMaybeXz(dir + "/trunc.xz").status().code(), absl::StatusCode::kDataLoss);
  const auto missing = ReadFileMaybeXz(dir + "/missing.csv");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("missing.csv"));
}

}  // namespace
}  // namespace sluice::sim
