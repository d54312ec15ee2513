// TokenServer under ManualEnv with a recording controller: a protocol 1.1 slot's sync_points
// deltas reach the controller as InstanceActivity::cycles_completed each period (0 when idle,
// reset on retirement), a 1.0 slot reports -1 (unknown) whatever its counter says; with Dilu's
// controller an iteration that stops ending (a burst) raises the SLO instance's share.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "common/sim_env.h"
#include "runtime/agent/agent_client.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/token_server.h"

namespace sluice::runtime {
namespace {

constexpr absl::Duration kPeriod = absl::Milliseconds(5);

// Records what it is shown each period; gives every instance an equal share.
class RecordingController : public core::VerticalController {
 public:
  std::string_view name() const override { return "recording"; }
  absl::Duration period() const override { return kPeriod; }
  void Issue(absl::Time, int64_t max_tokens, std::span<const core::InstanceActivity> instances,
             std::span<int64_t> tokens_out) override {
    periods.emplace_back(instances.begin(), instances.end());
    for (int64_t& t : tokens_out)
      t = max_tokens / static_cast<int64_t>(tokens_out.size());
  }
  std::vector<std::vector<core::InstanceActivity>> periods;
};

class TokenServerSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.gpu_uuid = absl::StrCat("GPU-tssync-", getpid());
    config_.period = kPeriod;
    config_.max_tokens = 1000;
    config_.slot_count = 4;
    auto ctl = std::make_unique<RecordingController>();
    controller_ = ctl.get();
    auto s = TokenServer::Create(env_, config_, std::move(ctl));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    server_->Start();
  }

  // Admits `instance` speaking protocol 1.`minor`; returns its slot.
  uint32_t Hello(int64_t instance, uint16_t minor) {
    SluiceHello h = MakeHello(config_.gpu_uuid, instance, -1);
    h.version_minor = minor;
    Admission a = server_->Admit(PeerCred{getpid(), getuid(), getgid()}, h);
    EXPECT_TRUE(a.admitted) << a.reject.detail;
    EXPECT_EQ(a.welcome.version_minor, std::min<uint16_t>(minor, SLUICE_PROTO_MINOR));
    return a.welcome.slot_index;
  }
  // What a client's sync hooks do: relaxed adds to the slot's counter.
  void Sync(uint32_t slot, int64_t n) {
    Shared(server_->segment().slot(slot).sync_points).fetch_add(n, std::memory_order_relaxed);
  }
  // cycles_completed the controller saw for `instance` in the latest period.
  int64_t LastCycles(int64_t instance) {
    EXPECT_FALSE(controller_->periods.empty());
    for (const core::InstanceActivity& a : controller_->periods.back()) {
      if (a.instance == common::InstanceId(instance))
        return a.cycles_completed;
    }
    ADD_FAILURE() << "instance " << instance << " not shown to the controller";
    return -2;
  }

  common::ManualEnv env_;
  TokenServerConfig config_;
  RecordingController* controller_ = nullptr;  // owned by server_
  std::unique_ptr<TokenServer> server_;
};

TEST_F(TokenServerSyncTest, SyncPointDeltasReachTheControllerEachPeriod) {
  const uint32_t slot = Hello(7, SLUICE_PROTO_MINOR);
  Sync(slot, 3);
  env_.Advance(kPeriod);
  EXPECT_EQ(LastCycles(7), 3);
  env_.Advance(kPeriod);
  EXPECT_EQ(LastCycles(7), 0);  // known and zero: no iteration ended
  for (int64_t n : {1, 5, 2}) {
    Sync(slot, n);
    env_.Advance(kPeriod);
    EXPECT_EQ(LastCycles(7), n);
  }
  EXPECT_EQ(controller_->periods.size(), 5u);
}

TEST_F(TokenServerSyncTest, AVersionOneZeroSlotIsUnknownBesideAOneOneSlot) {
  const uint32_t old_slot = Hello(1, 0);
  const uint32_t new_slot = Hello(2, SLUICE_PROTO_MINOR);
  Sync(old_slot, 4);  // a 1.0 client never writes it; even if something did, it is not read
  Sync(new_slot, 2);
  env_.Advance(kPeriod);
  EXPECT_EQ(LastCycles(1), -1);
  EXPECT_EQ(LastCycles(2), 2);
}

TEST_F(TokenServerSyncTest, ARetiredSlotStartsCountingAfresh) {
  const uint32_t slot = Hello(7, SLUICE_PROTO_MINOR);
  Sync(slot, 10);
  env_.Advance(kPeriod);
  ASSERT_EQ(LastCycles(7), 10);
  const uint32_t generation = Shared(server_->segment().slot(slot).generation).load();
  server_->Retire(slot, generation);
  EXPECT_EQ(Shared(server_->segment().slot(slot).sync_points).load(), 0);
  ASSERT_EQ(Hello(8, 0), slot);  // the same slot, now a 1.0 client
  env_.Advance(kPeriod);
  EXPECT_EQ(LastCycles(8), -1);
  server_->Retire(slot, Shared(server_->segment().slot(slot).generation).load());
  ASSERT_EQ(Hello(9, SLUICE_PROTO_MINOR), slot);
  Sync(slot, 1);
  env_.Advance(kPeriod);
  EXPECT_EQ(LastCycles(9), 1);  // not 1 - 10: the book was reset with the slot
}

// Dilu's controller on iteration boundaries: one-period iterations, then iterations that stop
// ending while the instance stays busy (a burst) -> the SLO instance gains, best effort shrinks.
TEST(TokenServerSyncDiluTest, StalledIterationsRaiseTheSloShare) {
  common::ManualEnv env;
  TokenServerConfig config;
  config.gpu_uuid = absl::StrCat("GPU-tssync-dilu-", getpid());
  config.period = kPeriod;
  config.max_tokens = 1000;
  config.slot_count = 2;
  auto ctl = MakeGpuController("dilu", kPeriod);
  ASSERT_TRUE(ctl.ok());
  auto made = TokenServer::Create(env, config, std::move(*ctl));
  ASSERT_TRUE(made.ok()) << made.status();
  TokenServer& server = **made;
  server.Start();
  const PeerCred peer{getpid(), getuid(), getgid()};
  std::vector<uint32_t> slots;
  for (bool slo : {true, false}) {
    InstanceSpec spec;
    spec.quota = {0.5, 1.0};
    spec.slo_sensitive = slo;
    const int64_t id = slo ? 1 : 2;
    ASSERT_TRUE(server.SetInstanceSpec(common::InstanceId(id), spec).ok());
    Admission a = server.Admit(peer, MakeHello(config.gpu_uuid, id, -1));
    ASSERT_TRUE(a.admitted) << a.reject.detail;
    ASSERT_EQ(a.welcome.version_minor, SLUICE_PROTO_MINOR);
    slots.push_back(a.welcome.slot_index);
  }
  auto period = [&](bool slo_busy, bool slo_iteration_ends) {
    for (uint32_t i : slots) {
      SluiceSlot& s = server.segment().slot(i);
      if (i == slots[0] && !slo_busy)
        continue;
      Shared(s.blocks_total).fetch_add(std::max<int64_t>(Shared(s.budget).exchange(0), 1));
      Shared(s.kernels_total).fetch_add(1);
      if (i == slots[0] && slo_iteration_ends)
        Shared(s.sync_points).fetch_add(1);
    }
    env.Advance(kPeriod);
  };
  auto tokens = [&](uint32_t i) {
    return Shared(server.segment().slot(i).tokens_issued).load();
  };
  for (int i = 0; i < 60; ++i)
    period(i % 2 == 0, i % 2 == 0);  // 1-period iterations
  const int64_t slo_before = tokens(slots[0]), be_before = tokens(slots[1]);
  for (int i = 0; i < 3; ++i)
    period(true, false);  // busy, but no iteration ends
  EXPECT_GT(tokens(slots[0]), slo_before);
  EXPECT_LT(tokens(slots[1]), be_before / 2) << "best effort squeezed";
}

}  // namespace
}  // namespace sluice::runtime
