// TokenServer time quotas (HAS-GPU's (s, q), protocol 1.2) under ManualEnv: exact budgets for
// (s, q) pairs with a one-period window and with a multi-period window (slices charged by the
// blocks actually run, not by idle periods), live quota changes within two periods, q = 1
// leaving budgets as the controller issued them, and the slot and header fields a client reads.
// The tests play the clients by writing the slot counters, as token_server_test.cc does.
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/sim_env.h"
#include "gtest/gtest.h"
#include "runtime/agent/agent_client.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/token_server.h"

namespace sluice::runtime {
namespace {

constexpr absl::Duration kPeriod = absl::Milliseconds(5);

class TimeQuotaTest : public ::testing::Test {
 protected:
  void Make(int window_periods, const std::string& controller = "static") {
    server_.reset();
    static int counter = 0;
    config_.gpu_uuid = absl::StrCat("GPU-tqtest-", getpid(), "-", ++counter);
    config_.period = kPeriod;
    config_.max_tokens = 1000;
    config_.time_window_periods = window_periods;
    auto s = TokenServer::Create(env_, config_, *MakeGpuController(controller, kPeriod));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    server_->Start();
  }
  InstanceSpec Spec(double s, double q) {
    InstanceSpec spec;
    spec.quota = {s, s, q};
    spec.slo_sensitive = false;
    return spec;
  }
  uint32_t Register(int64_t instance, double s, double q) {
    EXPECT_TRUE(server_->SetInstanceSpec(common::InstanceId(instance), Spec(s, q)).ok());
    const Admission a = server_->Admit(PeerCred{getpid(), getuid(), getgid()},
                                       MakeHello(config_.gpu_uuid, instance, -1));
    EXPECT_TRUE(a.admitted) << a.reject.detail;
    return a.welcome.slot_index;
  }
  SluiceSlot& Slot(uint32_t i) { return server_->segment().slot(i); }
  // One period: each busy slot runs its whole budget, then the server refills.
  void Period(const std::vector<uint32_t>& slots, const std::vector<bool>& busy) {
    for (size_t k = 0; k < slots.size(); ++k) {
      if (!busy[k]) continue;
      const int64_t left = Shared(Slot(slots[k]).budget).exchange(0);
      Shared(Slot(slots[k]).blocks_total).fetch_add(std::max<int64_t>(left, 0));
    }
    env_.Advance(kPeriod);
  }
  int64_t Tokens(uint32_t slot) { return Shared(Slot(slot).tokens_issued).load(); }

  common::ManualEnv env_;
  TokenServerConfig config_;
  std::unique_ptr<TokenServer> server_;
};

TEST(TimeSliceGrantTest, ScalesTheShareBudgetByWhatIsLeftOfTheSlice) {
  EXPECT_EQ(TimeSliceGrant(500, 1.0, 1, 0), 500);
  EXPECT_EQ(TimeSliceGrant(500, 1.0, 4, 7.5), 500) << "q = 1 never cuts";
  EXPECT_EQ(TimeSliceGrant(500, 0.3, 1, 0), 150);
  EXPECT_EQ(TimeSliceGrant(500, 0.7, 1, 0), 350);
  EXPECT_EQ(TimeSliceGrant(500, 0.3, 10, 0), 500);    // slice of 3 periods: full rate first
  EXPECT_EQ(TimeSliceGrant(500, 0.3, 10, 2.5), 250);  // half a period left
  EXPECT_EQ(TimeSliceGrant(500, 0.3, 10, 3), 0);      // spent: wait for the next window
  EXPECT_EQ(TimeSliceGrant(0, 0.3, 10, 0), 0);
}

TEST_F(TimeQuotaTest, OnePeriodWindowGivesExactlySTimesQEveryPeriod) {
  Make(1);
  const uint32_t a = Register(1, 0.5, 0.3), b = Register(2, 0.5, 0.7), c = Register(3, 0.2, 1.0);
  for (int i = 0; i < 4; ++i) {
    Period({a, b, c}, {true, true, true});
    EXPECT_EQ(Tokens(a), 150);
    EXPECT_EQ(Tokens(b), 350);
    EXPECT_EQ(Tokens(c), 200) << "q = 1: the controller's budget unchanged";
    EXPECT_EQ(Shared(Slot(a).share_tokens).load(), 500);
  }
  EXPECT_EQ(Slot(a).time_quota_ppm, 300000u);
  EXPECT_EQ(Slot(c).time_quota_ppm, 1000000u);
  EXPECT_EQ(server_->segment().header().time_window_ns, absl::ToInt64Nanoseconds(kPeriod));
  EXPECT_DOUBLE_EQ(server_->Slots()[a].quota.time_quota, 0.3);
}

TEST_F(TimeQuotaTest, MultiPeriodWindowRunsTheSliceAtFullShareThenWaits) {
  Make(10);
  const uint32_t a = Register(1, 0.5, 0.25);  // 2.5 periods of 500 tokens per 10-period window
  std::vector<int64_t> issued;
  for (int i = 0; i < 20; ++i) {
    Period({a}, {true});
    issued.push_back(Tokens(a));
  }
  // Period seq+1 = 10 opens the second window (issued[9] is for it).
  const std::vector<int64_t> window = {500, 500, 250, 0, 0, 0, 0, 0, 0, 500};
  EXPECT_EQ(std::vector<int64_t>(issued.begin(), issued.begin() + 10), window);
  int64_t total = 0;
  for (int i = 9; i < 19; ++i) total += issued[i];
  EXPECT_EQ(total, 1250) << "q x W x share tokens per window";
}

TEST_F(TimeQuotaTest, IdlePeriodsDoNotSpendTheSlice) {
  Make(10);
  const uint32_t a = Register(1, 0.5, 0.2);  // 2 periods of work per window
  for (int i = 0; i < 5; ++i) Period({a}, {false});  // idle: tokens offered but unused
  EXPECT_EQ(Tokens(a), 500);
  Period({a}, {true});
  EXPECT_EQ(Tokens(a), 500);
  Period({a}, {true});
  EXPECT_EQ(Tokens(a), 0) << "two periods of work spent the slice";
}

TEST_F(TimeQuotaTest, QuotaChangeTakesEffectWithinTwoPeriods) {
  for (int window : {1, 4}) {
    Make(window);
    const uint32_t a = Register(1, 0.5, 0.3);
    for (int i = 0; i < 2 * window; ++i) Period({a}, {true});
    ASSERT_TRUE(server_->SetInstanceSpec(common::InstanceId(1), Spec(0.5, 0.9)).ok());
    EXPECT_EQ(Slot(a).time_quota_ppm, 900000u) << "written to the slot at once";
    int64_t sum = 0;
    for (int i = 0; i < 2; ++i) {
      Period({a}, {true});
      sum += Tokens(a);
    }
    // Before: at most 0.3 x 500 per period on average; within two periods the slice grew.
    EXPECT_GE(sum, window == 1 ? 2 * 450 : 500) << "window " << window;
    ASSERT_TRUE(server_->SetInstanceSpec(common::InstanceId(1), Spec(0.5, 0.1)).ok());
    sum = 0;
    for (int i = 0; i < 2 + window; ++i) Period({a}, {true});
    for (int i = 0; i < window; ++i) {
      Period({a}, {true});
      sum += Tokens(a);
    }
    EXPECT_LE(sum, std::llround(0.1 * window * 500) + 1) << "window " << window;
  }
}

TEST_F(TimeQuotaTest, DilusControllerIsSlicedTheSameWay) {
  Make(1, "dilu");
  const uint32_t a = Register(1, 0.5, 0.3), b = Register(2, 0.5, 0.7);
  for (int i = 0; i < 5; ++i) Period({a, b}, {true, true});
  EXPECT_EQ(Tokens(a), 150);
  EXPECT_EQ(Tokens(b), 350);
}

TEST_F(TimeQuotaTest, RejectsBadWindowAndBadTimeQuota) {
  Make(1);
  TokenServerConfig c = config_;
  c.gpu_uuid += "-bad";
  c.time_window_periods = 0;
  EXPECT_FALSE(TokenServer::Create(env_, c, *MakeGpuController("static", kPeriod)).ok());
  c.time_window_periods = 1001;
  EXPECT_FALSE(TokenServer::Create(env_, c, *MakeGpuController("static", kPeriod)).ok());
  const absl::Status zero = server_->SetInstanceSpec(common::InstanceId(1), Spec(0.5, 0.0));
  EXPECT_FALSE(zero.ok());
  EXPECT_NE(zero.message().find("time_quota"), std::string::npos) << zero;
  EXPECT_FALSE(server_->SetInstanceSpec(common::InstanceId(1), Spec(0.5, 1.5)).ok());
}

}  // namespace
}  // namespace sluice::runtime
