// LoadWindow: the sojourn percentiles and SLO violations the gateway reports per function for
// the controller's dashboard.
#include "runtime/gateway/load_window.h"

#include "gtest/gtest.h"

namespace sluice::runtime::internal {
namespace {

TEST(LoadWindow, PercentilesAreNearestRankOverTheWindow) {
  LoadWindow w;
  EXPECT_EQ(w.SojournPercentileMs(0.99), 0);
  for (int ms = 1; ms <= 100; ++ms)
    w.OnAnswered(absl::Milliseconds(101 - ms));
  EXPECT_DOUBLE_EQ(w.SojournPercentileMs(0.50), 51);
  EXPECT_DOUBLE_EQ(w.SojournPercentileMs(0.95), 96);
  EXPECT_DOUBLE_EQ(w.SojournPercentileMs(0.99), 100);
  EXPECT_DOUBLE_EQ(w.SojournPercentileMs(1.0), 100);
  w.Reset();
  EXPECT_EQ(w.SojournPercentileMs(0.5), 0);
  EXPECT_EQ(w.answered(), 0);
}

TEST(LoadWindow, ViolationsAreLateFailedAndRejectedRequests) {
  LoadWindow w;
  w.OnAnswered(absl::Milliseconds(10));
  w.OnAnswered(absl::Milliseconds(60));                   // late for a 50 ms SLO
  w.OnAnswered(absl::Milliseconds(5), /*failed=*/true);   // an error answer
  w.OnRejected();                                         // a 429
  EXPECT_EQ(w.SloViolations(50), 3);
  EXPECT_EQ(w.SloViolations(0), 2) << "no SLO: only failures and rejections";
  EXPECT_EQ(w.rejected(), 1);
  EXPECT_EQ(w.answered(), 3);
  w.Reset();
  EXPECT_EQ(w.SloViolations(50), 0);
  EXPECT_EQ(w.rejected(), 0);
}

}  // namespace
}  // namespace sluice::runtime::internal
