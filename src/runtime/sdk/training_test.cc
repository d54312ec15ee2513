// TrainingLoop over real HTTP on 127.0.0.1:0 with fake steps.
#include "runtime/sdk/training.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

std::unique_ptr<TrainingLoop> StartLoop(int64_t iterations) {
  TrainingOptions o;
  o.iterations = iterations;
  o.memory_bytes = [] {
    return int64_t{77};
  };
  auto t = TrainingLoop::Start(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

TEST(TrainingLoopTest, RunsIterationsAndServesATrialBetweenSteps) {
  std::unique_ptr<TrainingLoop> loop = StartLoop(5);
  ASSERT_NE(loop, nullptr);
  const std::string base = absl::StrCat("http://127.0.0.1:", loop->port());
  EXPECT_EQ(http::Get(base + "/v2/health/ready")->status, 503);  // not running yet
  absl::Notification first_step, release;
  std::vector<int64_t> seen;  // written by the Run thread only
  absl::Status result;
  std::thread runner([&] {
    result = loop->Run([&](int64_t step) {
      seen.push_back(step);
      if (step == 0) {
        first_step.Notify();
        release.WaitForNotification();
      }
      return absl::OkStatus();
    });
  });
  first_step.WaitForNotification();
  EXPECT_EQ(http::Get(base + "/v2/health/ready")->status, 200);
  absl::StatusOr<http::Response> trial;
  std::thread client([&] { trial = http::Post(base + "/sluice/v1/trial", R"({"iterations":3})"); });
  while (json::parse(http::Get(base + "/sluice/v1/stats")->body)["trials_queued"] != 1) {
    std::this_thread::yield();
  }
  release.Notify();
  client.join();
  runner.join();
  ASSERT_TRUE(result.ok()) << result;
  ASSERT_TRUE(trial.ok()) << trial.status();
  ASSERT_EQ(trial->status, 200) << trial->body;
  json j = json::parse(trial->body);
  EXPECT_EQ(j["iterations"], 3);
  EXPECT_EQ(j["batch"], 1);
  EXPECT_EQ(j["memory_bytes"], 77);
  EXPECT_EQ(loop->completed(), 5);
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));  // 5 steps + 3 trial steps
}

TEST(TrainingLoopTest, AFailingStepEndsTheRunWithItsError) {
  std::unique_ptr<TrainingLoop> loop = StartLoop(10);
  ASSERT_NE(loop, nullptr);
  absl::Status s = loop->Run(
      [](int64_t step) { return step == 2 ? absl::InternalError("diverged") : absl::OkStatus(); });
  EXPECT_EQ(s.message(), "diverged");
  EXPECT_EQ(loop->completed(), 2);
}

TEST(TrainingLoopTest, StopEndsTheRunAfterTheCurrentStep) {
  std::unique_ptr<TrainingLoop> loop = StartLoop(1000000);
  ASSERT_NE(loop, nullptr);
  TrainingLoop* raw = loop.get();
  absl::Status s = loop->Run([raw](int64_t step) {
    if (step == 3) {
      raw->Stop();
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(loop->completed(), 4);
}

}  // namespace
}  // namespace sluice::runtime
