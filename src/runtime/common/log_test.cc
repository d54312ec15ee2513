// Tests of the daemon log line format.
#include "runtime/common/log.h"

#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(LogTest, FormatsTimestampLevelComponentAndText) {
  EXPECT_EQ(FormatLogLine(LogLevel::kWarning, "gateway", "route table rejected", 1'795'293'062'123),
            "2026-11-21T20:31:02.123Z W gateway: route table rejected");
  EXPECT_EQ(FormatLogLine(LogLevel::kInfo, "agent", "x", 0), "1970-01-01T00:00:00.000Z I agent: x");
  EXPECT_EQ(FormatLogLine(LogLevel::kError, "c", "", 0), "1970-01-01T00:00:00.000Z E c: ");
}

}  // namespace
}  // namespace sluice::runtime
