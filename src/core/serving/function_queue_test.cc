// FunctionQueue: admission bound and Retry-After, FIFO batches, deadline expiry, and (property)
// conservation: over seeded random admit/batch/expire/remove sequences every accepted request
// leaves exactly once and the queue never exceeds its bound.
#include "core/serving/function_queue.h"

#include <map>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch();

QueuedRequest Req(uint64_t id, int arrival_ms, int deadline_ms) {
  return {id, kT0 + absl::Milliseconds(arrival_ms), kT0 + absl::Milliseconds(deadline_ms)};
}

TEST(RetryAfterTest, CeilOfQueuedOverCapacityAtLeastOneSecond) {
  EXPECT_EQ(RetryAfter(0, 10), absl::Seconds(1));
  EXPECT_EQ(RetryAfter(5, 10), absl::Seconds(1));
  EXPECT_EQ(RetryAfter(21, 10), absl::Seconds(3));
  EXPECT_EQ(RetryAfter(20, 10), absl::Seconds(2));
  EXPECT_EQ(RetryAfter(100, 0), absl::Seconds(1));  // unknown capacity
}

TEST(FunctionQueueTest, RejectsInvalidBound) {
  EXPECT_FALSE(FunctionQueue::Create(0).ok());
  EXPECT_TRUE(FunctionQueue::Create(1).ok());
}

TEST(FunctionQueueTest, AdmitsUpToTheBoundThenRejectsWithRetryAfter) {
  FunctionQueue q = *FunctionQueue::Create(3);
  for (uint64_t i = 1; i <= 3; ++i)
    EXPECT_TRUE(q.Admit(Req(i, 0, 100), 1.5).accepted);
  const AdmitResult r = q.Admit(Req(4, 0, 100), 1.5);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.retry_after, absl::Seconds(2));  // ceil(3 / 1.5)
  EXPECT_EQ(q.size(), 3);
  q.set_max_queued(2);  // lowering evicts nothing
  EXPECT_EQ(q.size(), 3);
  EXPECT_FALSE(q.Admit(Req(4, 0, 100), 1.5).accepted);
  q.set_max_queued(4);
  EXPECT_TRUE(q.Admit(Req(4, 0, 100), 1.5).accepted);
}

TEST(FunctionQueueTest, BatchesAreFifoAndExpiryFollowsDeadlines) {
  FunctionQueue q = *FunctionQueue::Create(10);
  ASSERT_TRUE(q.Admit(Req(1, 0, 50), 1).accepted);
  ASSERT_TRUE(q.Admit(Req(2, 1, 10), 1).accepted);
  ASSERT_TRUE(q.Admit(Req(3, 2, 30), 1).accepted);
  ASSERT_TRUE(q.Admit(Req(4, 3, 10), 1).accepted);
  EXPECT_EQ(*q.OldestArrival(), kT0);
  EXPECT_EQ(q.NextDeadline(), kT0 + absl::Milliseconds(10));
  const std::vector<QueuedRequest> expired = q.Expired(kT0 + absl::Milliseconds(10));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].id, 2u);
  EXPECT_EQ(expired[1].id, 4u);
  EXPECT_TRUE(q.Remove(3));
  EXPECT_FALSE(q.Remove(3));
  const std::vector<QueuedRequest> batch = q.NextBatch(4);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].id, 1u);
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.OldestArrival().has_value());
  EXPECT_EQ(q.NextDeadline(), absl::InfiniteFuture());
}

TEST(FunctionQueuePropertyTest, NoRequestLostOrDuplicatedAndBoundHolds) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t bound = 1 + static_cast<int64_t>(rng() % 16);
    FunctionQueue q = *FunctionQueue::Create(bound);
    std::map<uint64_t, QueuedRequest> model;  // accepted and not yet out
    std::set<uint64_t> out;
    int now_ms = 0;
    uint64_t next_id = 1;
    for (int step = 0; step < 400; ++step) {
      const int op = static_cast<int>(rng() % 5);
      if (op <= 1) {
        const QueuedRequest r = Req(next_id++, now_ms, now_ms + 1 + static_cast<int>(rng() % 40));
        const bool full = static_cast<int64_t>(model.size()) == bound;
        const AdmitResult res = q.Admit(r, static_cast<double>(rng() % 5));
        ASSERT_EQ(res.accepted, !full) << "seed " << seed << " step " << step;
        if (res.accepted)
          model[r.id] = r;
        else
          ASSERT_GE(res.retry_after, absl::Seconds(1)) << "seed " << seed;
      } else if (op == 2) {
        const int max_batch = 1 + static_cast<int>(rng() % 6);
        const auto batch = q.NextBatch(max_batch);
        ASSERT_LE(static_cast<int>(batch.size()), max_batch) << "seed " << seed;
        ASSERT_EQ(batch.size(), std::min<size_t>(max_batch, model.size())) << "seed " << seed;
        for (size_t i = 0; i < batch.size(); ++i) {
          // FIFO: ids are handed out in arrival order, so the batch is the smallest ids.
          ASSERT_EQ(batch[i].id, model.begin()->first) << "seed " << seed;
          ASSERT_TRUE(out.insert(batch[i].id).second) << "seed " << seed;
          model.erase(model.begin());
        }
      } else if (op == 3) {
        now_ms += static_cast<int>(rng() % 10);
        const absl::Time now = kT0 + absl::Milliseconds(now_ms);
        for (const QueuedRequest& r : q.Expired(now)) {
          ASSERT_LE(r.deadline, now) << "seed " << seed;
          ASSERT_EQ(model.erase(r.id), 1u) << "seed " << seed;
          ASSERT_TRUE(out.insert(r.id).second) << "seed " << seed;
        }
        for (const auto& [id, r] : model)
          ASSERT_GT(r.deadline, now) << "seed " << seed << " id " << id;
      } else if (!model.empty()) {
        auto it = model.begin();
        std::advance(it, static_cast<long>(rng() % model.size()));
        ASSERT_TRUE(q.Remove(it->first)) << "seed " << seed;
        out.insert(it->first);
        model.erase(it);
      }
      ASSERT_EQ(q.size(), static_cast<int64_t>(model.size())) << "seed " << seed;
      ASSERT_LE(q.size(), bound) << "seed " << seed;
      absl::Time earliest = absl::InfiniteFuture();
      for (const auto& [id, r] : model)
        earliest = std::min(earliest, r.deadline);
      ASSERT_EQ(q.NextDeadline(), earliest) << "seed " << seed;
    }
    // Whatever is left drains exactly once.
    const size_t left = model.size();
    const auto rest = q.NextBatch(static_cast<int>(bound));
    ASSERT_EQ(rest.size(), left) << "seed " << seed;
    for (const QueuedRequest& r : rest)
      ASSERT_TRUE(out.insert(r.id).second && model.erase(r.id) == 1) << "seed " << seed;
  }
}

}  // namespace
}  // namespace sluice::core
