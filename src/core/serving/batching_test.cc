// The batching rule: a full batch or an expired max queue delay starts now, otherwise the oldest
// request's delay bound says when to look again.
#include "core/serving/batching.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

TEST(BatchDueAtTest, FullBatchOrExpiredDelayStartsNow) {
  const absl::Time t0 = absl::UnixEpoch();
  const absl::Time now = t0 + absl::Milliseconds(3);
  EXPECT_EQ(BatchDueAt(now, 4, t0, 4, absl::Milliseconds(10)), now);
  EXPECT_EQ(BatchDueAt(now, 5, t0, 4, absl::Milliseconds(10)), now);
  EXPECT_EQ(BatchDueAt(now, 1, t0, 4, absl::Milliseconds(10)), t0 + absl::Milliseconds(10));
  EXPECT_EQ(BatchDueAt(now, 1, t0, 4, absl::Milliseconds(2)), now);
  EXPECT_EQ(BatchDueAt(now, 1, t0, 4, absl::ZeroDuration()), now);
  EXPECT_EQ(BatchDueAt(now, 3, t0, 4, absl::Milliseconds(3)), now);  // exactly at the bound
}

TEST(BatchDueAtTest, DueTimeIsNeverInThePastAndNeverLaterThanTheDelayBound) {
  const absl::Time t0 = absl::UnixEpoch();
  for (int queued = 1; queued <= 8; ++queued) {
    for (int wait_ms = 0; wait_ms <= 20; ++wait_ms) {
      const absl::Time now = t0 + absl::Milliseconds(wait_ms);
      const absl::Time due = BatchDueAt(now, queued, t0, 4, absl::Milliseconds(10));
      EXPECT_GE(due, now);
      EXPECT_LE(due, std::max(now, t0 + absl::Milliseconds(10)));
    }
  }
}

}  // namespace
}  // namespace sluice::core
