// RingQueue against std::deque over random pushes, pops at both ends and clears (the order, the
// size, front, back and indexing agree at every step, across growth and wrap-around).
#include "common/ring_queue.h"

#include <deque>
#include <random>

#include "gtest/gtest.h"

namespace sluice::common {
namespace {

TEST(RingQueueTest, BehavesAsADeque) {
  std::mt19937 rng(3);
  RingQueue<int> q;
  std::deque<int> ref;
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    const unsigned op = rng() % 100;
    if (op < 55) {
      q.push_back(next);
      ref.push_back(next++);
    } else if (op < 84) {
      if (!ref.empty()) {
        q.pop_front();
        ref.pop_front();
      }
    } else if (op < 99) {
      if (!ref.empty()) {  // a monotone queue's back pops (DiluVerticalController's T_min)
        q.pop_back();
        ref.pop_back();
      }
    } else {
      q.clear();
      ref.clear();
    }
    ASSERT_EQ(q.size(), ref.size()) << "step " << step;
    ASSERT_EQ(q.empty(), ref.empty());
    if (!ref.empty()) {
      ASSERT_EQ(q.front(), ref.front());
      ASSERT_EQ(q.back(), ref.back());
      const size_t i = rng() % ref.size();
      ASSERT_EQ(q[i], ref[i]);
    }
  }
}

TEST(RingQueueTest, GrowsPastItsFirstBufferWithTheOrderKept) {
  RingQueue<int> q;
  for (int i = 0; i < 5; ++i)
    q.push_back(i);
  for (int i = 0; i < 3; ++i)
    q.pop_front();  // head inside the buffer: growth must unwrap
  for (int i = 5; i < 40; ++i)
    q.push_back(i);
  ASSERT_EQ(q.size(), 37u);
  for (size_t i = 0; i < q.size(); ++i)
    EXPECT_EQ(q[i], static_cast<int>(i) + 3);
}

}  // namespace
}  // namespace sluice::common
