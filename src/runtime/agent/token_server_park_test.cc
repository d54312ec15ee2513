// TokenServer's memory-only idle (SetParked) and pooled-process binding (BindPid) under
// ManualEnv: periods are driven by hand and the test plays the clients by writing the counters
// a saturating client would. Times are counted in token periods (issue 13 item 4).
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/sim_env.h"
#include "gtest/gtest.h"
#include "runtime/agent/agent_client.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/token_server.h"

namespace sluice::runtime {
namespace {

constexpr absl::Duration kPeriod = absl::Milliseconds(5);

class TokenServerParkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.gpu_uuid = absl::StrCat("GPU-parktest-", getpid());
    config_.period = kPeriod;
    config_.max_tokens = 1000;
    config_.slot_count = 8;
    auto s = TokenServer::Create(env_, config_, *MakeGpuController("dilu", kPeriod));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    server_->Start();
  }
  void Spec(int64_t instance, double request, double limit) {
    InstanceSpec spec;
    spec.quota = {request, limit};
    ASSERT_TRUE(server_->SetInstanceSpec(common::InstanceId(instance), spec).ok());
  }
  uint32_t Hello(int64_t instance) {
    SluiceHello hello = MakeHello(config_.gpu_uuid, instance, -1);
    const Admission a = server_->Admit(PeerCred{getpid(), getuid(), getgid()}, hello);
    EXPECT_TRUE(a.admitted) << a.reject.detail;
    return a.welcome.slot_index;
  }
  SluiceSlot& Slot(uint32_t i) { return server_->segment().slot(i); }
  // One period in which every listed slot launches its whole budget (at least one block).
  void BusyPeriod(const std::vector<uint32_t>& slots) {
    for (uint32_t i : slots) {
      const int64_t left = Shared(Slot(i).budget).exchange(0);
      Shared(Slot(i).blocks_total).fetch_add(std::max<int64_t>(left, 1));
      Shared(Slot(i).kernels_total).fetch_add(1);
    }
    env_.Advance(kPeriod);
  }
  int64_t Tokens(uint32_t slot) { return Shared(Slot(slot).tokens_issued).load(); }

  common::ManualEnv env_;
  TokenServerConfig config_;
  std::unique_ptr<TokenServer> server_;
};

TEST_F(TokenServerParkTest, ParkedInstanceGetsNoTokensAndItsShareBackWithinOnePeriodOfDemand) {
  Spec(1, 0.5, 1.0);
  Spec(2, 0.5, 1.0);
  const uint32_t a = Hello(1), b = Hello(2);
  for (int i = 0; i < 40; ++i) BusyPeriod({a, b});
  ASSERT_NEAR(Tokens(a), 500, 20);
  ASSERT_NEAR(Tokens(b), 500, 20);

  server_->SetParked(common::InstanceId(2), true);
  EXPECT_TRUE(server_->IsParked(common::InstanceId(2)));
  BusyPeriod({a});  // b idles, parked: granted nothing
  EXPECT_EQ(Tokens(b), 0);
  EXPECT_LE(Shared(Slot(b).budget).load(), 0);
  for (int i = 0; i < 3; ++i) BusyPeriod({a});
  EXPECT_GE(Tokens(a), 950) << "b's reserved share went to a";
  EXPECT_EQ(Tokens(b), 0);
  EXPECT_EQ(Shared(Slot(b).state).load(), uint32_t{SLUICE_SLOT_ACTIVE}) << "memory kept";

  // A request is routed to b: it launches (against a zero budget). Counted in token periods.
  int periods = 0;
  while (Tokens(b) < 450 && periods < 10) {
    BusyPeriod({a, b});
    ++periods;
  }
  EXPECT_EQ(periods, 1) << "b had its share back after " << periods << " token periods";
  EXPECT_FALSE(server_->IsParked(common::InstanceId(2)));
  EXPECT_EQ(server_->unparked_on_demand(), 1u);
  EXPECT_LE(Tokens(a), 560);
}

TEST_F(TokenServerParkTest, ExplicitUnparkRestoresTheShareWithinOnePeriod) {
  Spec(1, 0.5, 1.0);
  Spec(2, 0.5, 1.0);
  const uint32_t a = Hello(1), b = Hello(2);
  for (int i = 0; i < 20; ++i) BusyPeriod({a, b});
  server_->SetParked(common::InstanceId(2), true);
  for (int i = 0; i < 3; ++i) BusyPeriod({a});
  ASSERT_EQ(Tokens(b), 0);
  server_->SetParked(common::InstanceId(2), false);
  BusyPeriod({a, b});
  EXPECT_GE(Tokens(b), 450);
  EXPECT_EQ(server_->unparked_on_demand(), 0u) << "unparked by the call, not by demand";
}

TEST_F(TokenServerParkTest, ParkingAnInstanceWithNoSlotAppliesWhenItRegisters) {
  Spec(3, 0.5, 1.0);
  server_->SetParked(common::InstanceId(3), true);
  const uint32_t c = Hello(3);
  env_.Advance(kPeriod);
  EXPECT_EQ(Tokens(c), 0);
  EXPECT_TRUE(server_->IsParked(common::InstanceId(3)));
  server_->SetParked(common::InstanceId(3), false);
  BusyPeriod({c});
  EXPECT_GT(Tokens(c), 0);
}

TEST_F(TokenServerParkTest, BoundPidCountsAsItsInstanceForLiveAndLaterSlots) {
  Spec(7, 0.25, 0.5);
  const uint32_t pooled = Hello(1000000);  // a pre-started process registers with its pool id
  EXPECT_EQ(Slot(pooled).instance_id, 1000000);
  server_->BindPid(getpid(), common::InstanceId(7));
  EXPECT_EQ(Slot(pooled).instance_id, 7);
  EXPECT_EQ(Shared(Slot(pooled).request_ppm).load(), 250000u);
  EXPECT_EQ(Shared(Slot(pooled).limit_ppm).load(), 500000u);
  const uint32_t again = Hello(1000000);  // a second context of the same process
  EXPECT_EQ(Slot(again).instance_id, 7);
  server_->SetParked(common::InstanceId(7), true);
  env_.Advance(kPeriod);
  EXPECT_EQ(Tokens(pooled), 0);
  EXPECT_EQ(Tokens(again), 0);
}

}  // namespace
}  // namespace sluice::runtime
