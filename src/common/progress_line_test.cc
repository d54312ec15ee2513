// ProgressLine: the first update writes, later ones at most once per interval, Finish ends the
// line once.
#include "common/progress_line.h"

#include <sstream>

#include "gtest/gtest.h"

namespace sluice::common {
namespace {

TEST(ProgressLineTest, ThrottlesAndRewritesInPlace) {
  std::ostringstream out;
  const absl::Time t0 = absl::UnixEpoch();
  {
    ProgressLine line(out, absl::Milliseconds(250));
    EXPECT_TRUE(line.Update(t0, "a"));
    EXPECT_FALSE(line.Update(t0 + absl::Milliseconds(100), "b"));
    EXPECT_TRUE(line.Update(t0 + absl::Milliseconds(250), "c"));
    EXPECT_TRUE(line.Update(t0 + absl::Milliseconds(260), "d", /*force=*/true));
    line.Finish();
    line.Finish();
  }
  EXPECT_EQ(out.str(), "\ra\x1b[K\rc\x1b[K\rd\x1b[K\n");
}

TEST(ProgressLineTest, WritesNothingWhenNeverUpdated) {
  std::ostringstream out;
  { ProgressLine line(out); }
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace sluice::common
