#include "runtime/sdk/serial_worker.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

TEST(SerialWorkerTest, RunsJobsInOrderAndFinishesAcceptedOnesOnJoin) {
  SerialWorker w;
  absl::Notification gate;
  std::vector<int> order;  // written by the worker only; read after Join
  ASSERT_TRUE(w.Submit([&] { gate.WaitForNotification(); }));
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(w.Submit([&order, i] { order.push_back(i); }));
  }
  EXPECT_EQ(w.pending(), 51);
  w.Close();
  EXPECT_FALSE(w.Submit([&] { order.push_back(-1); }));  // refused after Close
  gate.Notify();
  w.Join();
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(order[i], i);
  }
  EXPECT_EQ(w.pending(), 0);
}

}  // namespace
}  // namespace sluice::runtime
