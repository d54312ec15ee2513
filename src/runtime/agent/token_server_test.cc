// TokenServer under ManualEnv: periods are driven by hand and the tests play the clients by
// writing the slot counters a client would (a saturating client launches its whole budget).
// Covers admission (version, GPU, slots, SO_PEERCRED pid), the period (counters -> Dilu's
// controller -> budgets, debt, stamps, heartbeat, futex wake), work conservation, an SLO burst,
// live quota updates, retirement and reaping.
#include "runtime/agent/token_server.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/sim_env.h"
#include "gtest/gtest.h"
#include "runtime/agent/agent_client.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/common/subprocess.h"

namespace sluice::runtime {
namespace {

constexpr absl::Duration kPeriod = absl::Milliseconds(5);

class TokenServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(16); }

  void Make(uint32_t slots, const std::string& controller = "dilu") {
    server_.reset();
    static int counter = 0;
    config_.gpu_uuid = absl::StrCat("GPU-tstest-", getpid(), "-", ++counter);
    config_.period = kPeriod;
    config_.max_tokens = 1000;
    config_.slot_count = slots;
    auto ctl = MakeGpuController(controller, kPeriod);
    ASSERT_TRUE(ctl.ok());
    auto s = TokenServer::Create(env_, config_, std::move(*ctl));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    server_->Start();
  }

  // The clients here play protocol 1.0 (no sync points), so the controller infers launch cycles
  // from runs of busy periods; token_server_sync_test.cc covers 1.1 iteration boundaries.
  Admission Hello(int64_t instance, pid_t pid = getpid(), int32_t slot = -1) {
    SluiceHello hello = MakeHello(config_.gpu_uuid, instance, slot);
    hello.version_minor = 0;
    return server_->Admit(PeerCred{pid, getuid(), getgid()}, hello);
  }
  uint32_t Register(int64_t instance, double request, double limit, bool slo) {
    InstanceSpec spec;
    spec.quota = {request, limit};
    spec.slo_sensitive = slo;
    EXPECT_TRUE(server_->SetInstanceSpec(common::InstanceId(instance), spec).ok());
    Admission a = Hello(instance);
    EXPECT_TRUE(a.admitted) << a.reject.detail;
    return a.welcome.slot_index;
  }
  SluiceSlot& Slot(uint32_t i) { return server_->segment().slot(i); }
  // One period: each busy slot launches its whole budget, then the server runs.
  void Period(const std::vector<uint32_t>& slots, const std::vector<bool>& busy) {
    for (size_t k = 0; k < slots.size(); ++k) {
      if (!busy[k]) continue;
      SluiceSlot& s = Slot(slots[k]);
      const int64_t left = Shared(s.budget).exchange(0);
      Shared(s.blocks_total).fetch_add(std::max<int64_t>(left, 1));
      Shared(s.kernels_total).fetch_add(1);
    }
    env_.Advance(kPeriod);
  }
  int64_t Tokens(uint32_t slot) { return Shared(Slot(slot).tokens_issued).load(); }

  common::ManualEnv env_;
  TokenServerConfig config_;
  std::unique_ptr<TokenServer> server_;
};

TEST_F(TokenServerTest, RejectsBadConfig) {
  TokenServerConfig c = config_;
  c.gpu_uuid += "-bad";
  c.period = absl::Microseconds(500);
  EXPECT_FALSE(TokenServer::Create(env_, c, *MakeGpuController("dilu", kPeriod)).ok());
  c.period = kPeriod;
  c.max_tokens = 0;
  EXPECT_FALSE(TokenServer::Create(env_, c, *MakeGpuController("dilu", kPeriod)).ok());
  c.max_tokens = 1;
  c.slot_count = SLUICE_MAX_SLOTS + 1;
  EXPECT_FALSE(TokenServer::Create(env_, c, *MakeGpuController("dilu", kPeriod)).ok());
  EXPECT_FALSE(MakeGpuController("fastest", kPeriod).ok());
}

TEST_F(TokenServerTest, SecondServerForTheSameGpuIsRefused) {
  auto again = TokenServer::Create(env_, config_, *MakeGpuController("dilu", kPeriod));
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
}

TEST_F(TokenServerTest, RejectsOtherMajorVersionsWithAReason) {
  SluiceHello h = MakeHello(config_.gpu_uuid, 1, -1);
  h.version_major = SLUICE_PROTO_MAJOR + 1;
  h.version_minor = 7;
  const Admission a = server_->Admit(PeerCred{getpid(), getuid(), getgid()}, h);
  EXPECT_FALSE(a.admitted);
  EXPECT_EQ(a.reject.reason, SLUICE_REJECT_VERSION);
  EXPECT_EQ(a.reject.version_major, SLUICE_PROTO_MAJOR);
  EXPECT_NE(std::string(a.reject.detail).find(absl::StrCat("client ", SLUICE_PROTO_MAJOR + 1, ".7")),
            std::string::npos)
      << a.reject.detail;
  h = MakeHello("GPU-someone-else", 1, -1);
  EXPECT_EQ(server_->Admit(PeerCred{getpid(), 0, 0}, h).reject.reason, SLUICE_REJECT_UNKNOWN_GPU);
  h = MakeHello(config_.gpu_uuid, 1, -1);
  h.hdr.bytes = 12;
  EXPECT_EQ(server_->Admit(PeerCred{getpid(), 0, 0}, h).reject.reason, SLUICE_REJECT_MALFORMED);
}

TEST_F(TokenServerTest, AdmitRecordsTheCredentialPidAndTheSpec) {
  InstanceSpec spec;
  spec.quota = {0.25, 0.5};
  spec.slo_sensitive = false;
  spec.mem_limit_bytes = 1 << 20;
  ASSERT_TRUE(server_->SetInstanceSpec(common::InstanceId(7), spec).ok());
  SluiceHello h = MakeHello(config_.gpu_uuid, 7, -1);
  h.pid = 1;  // the message's claim is ignored
  const Admission a = server_->Admit(PeerCred{getpid(), getuid(), getgid()}, h);
  ASSERT_TRUE(a.admitted);
  const SluiceSlot& s = Slot(a.welcome.slot_index);
  EXPECT_EQ(static_cast<pid_t>(s.pid), getpid());
  EXPECT_EQ(s.instance_id, 7);
  EXPECT_EQ(s.request_ppm, 250000u);
  EXPECT_EQ(s.limit_ppm, 500000u);
  EXPECT_EQ(s.priority, uint32_t{SLUICE_PRIO_BEST_EFFORT});
  EXPECT_EQ(s.mem_limit_bytes, 1 << 20);
  EXPECT_EQ(s.state, uint32_t{SLUICE_SLOT_ACTIVE});
  EXPECT_EQ(a.welcome.generation, s.generation);
  EXPECT_EQ(std::string(a.welcome.shm_name), server_->segment().name());
  EXPECT_EQ(s.budget, 250);  // its request until the controller first speaks
}

TEST_F(TokenServerTest, FullGpuRejectsAndARetiredSlotIsReused) {
  Make(2);
  const Admission a = Hello(1), b = Hello(2);
  ASSERT_TRUE(a.admitted && b.admitted);
  EXPECT_EQ(Hello(3).reject.reason, SLUICE_REJECT_NO_SLOT);
  EXPECT_EQ(Hello(3, getpid() + 0, static_cast<int32_t>(a.welcome.slot_index)).admitted, true)
      << "the same pid may re-attach its own slot";
  server_->Retire(b.welcome.slot_index, b.welcome.generation);
  const Admission c = Hello(4);
  ASSERT_TRUE(c.admitted);
  EXPECT_EQ(c.welcome.slot_index, b.welcome.slot_index);
  EXPECT_EQ(c.welcome.generation, b.welcome.generation + 1);
  server_->Retire(c.welcome.slot_index, b.welcome.generation);  // stale generation: ignored
  EXPECT_EQ(Slot(c.welcome.slot_index).state, uint32_t{SLUICE_SLOT_ACTIVE});
}

TEST_F(TokenServerTest, PeriodStampsBudgetsAndHeartbeat) {
  const uint32_t a = Register(1, 0.3, 0.3, false), b = Register(2, 0.7, 0.7, false);
  for (int i = 0; i < 3; ++i) Period({a, b}, {true, true});
  const SluiceShmHeader& h = server_->segment().header();
  EXPECT_EQ(h.period_seq, 3u);
  EXPECT_EQ(h.heartbeat_ns, absl::ToUnixNanos(env_.Now()));
  EXPECT_EQ(Slot(a).budget_period, 3u);
  EXPECT_EQ(Tokens(a), 300);  // best effort, no SLO instance: each at its limit
  EXPECT_EQ(Tokens(b), 700);
  EXPECT_EQ(Slot(a).budget, 300);
  EXPECT_EQ(Slot(b).blocks_last_period, 700);  // what b launched in the last period
  Shared(Slot(a).budget).store(-40);  // a launch overdrew the budget
  Period({a, b}, {false, true});
  EXPECT_EQ(Slot(a).budget, 300 - 40) << "debt carries into the next period";
  EXPECT_EQ(server_->periods_run(), 4u);
}

TEST_F(TokenServerTest, IdleCoRunnersShareGoesToTheBusyOneWithinThreePeriods) {
  const uint32_t a = Register(1, 0.3, 1.0, true), b = Register(2, 0.7, 1.0, true);
  for (int i = 0; i < 40; ++i) Period({a, b}, {true, true});
  EXPECT_NEAR(Tokens(a), 300, 10);
  EXPECT_NEAR(Tokens(b), 700, 10);
  for (int i = 0; i < 3; ++i) Period({a, b}, {true, false});
  EXPECT_GE(Tokens(a), 950) << "work conserving: a takes b's share while b idles";
}

TEST_F(TokenServerTest, SloBurstRaisesItsShareAndSqueezesBestEffortWithinThreePeriods) {
  const uint32_t slo = Register(1, 0.5, 1.0, true), be = Register(2, 0.5, 1.0, false);
  for (int i = 0; i < 60; ++i) Period({slo, be}, {i % 2 == 0, true});  // 1-period launch cycles
  const int64_t slo_before = Tokens(slo), be_before = Tokens(be);
  for (int i = 0; i < 3; ++i) Period({slo, be}, {true, true});  // the cycle stretches: a burst
  EXPECT_GT(Tokens(slo), slo_before);
  EXPECT_LT(Tokens(be), be_before / 2) << "best effort squeezed";
  EXPECT_GT(Slot(slo).klc_ns, 0);  // the server measured the 1-period cycles
}

TEST_F(TokenServerTest, QuotaUpdateTakesEffectWithinTwoPeriods) {
  const uint32_t a = Register(1, 0.3, 0.3, false), b = Register(2, 0.7, 0.7, false);
  for (int i = 0; i < 5; ++i) Period({a, b}, {true, true});
  InstanceSpec up, down;
  up.quota = {0.6, 0.6};
  up.slo_sensitive = down.slo_sensitive = false;
  down.quota = {0.4, 0.4};
  ASSERT_TRUE(server_->SetInstanceSpec(common::InstanceId(1), up).ok());
  ASSERT_TRUE(server_->SetInstanceSpec(common::InstanceId(2), down).ok());
  for (int i = 0; i < 2; ++i) Period({a, b}, {true, true});
  EXPECT_EQ(Tokens(a), 600);
  EXPECT_EQ(Tokens(b), 400);
  down.quota = {0.5, 0.4};
  EXPECT_FALSE(server_->SetInstanceSpec(common::InstanceId(2), down).ok());  // request > limit
}

TEST_F(TokenServerTest, RetiredSlotReleasesItsTokensAndMemory) {
  const uint32_t a = Register(1, 0.5, 0.5, false);
  Period({a}, {true});
  Shared(Slot(a).mem_used_bytes).store(123 << 20);  // as the client's allocations would
  ASSERT_EQ(server_->Slots()[a].mem_used_bytes, 123 << 20);
  server_->Retire(a, Slot(a).generation);
  const SlotView v = server_->Slots()[a];
  EXPECT_EQ(v.state, uint32_t{SLUICE_SLOT_FREE});
  EXPECT_EQ(v.mem_used_bytes, 0);
  EXPECT_EQ(v.budget, 0);
  EXPECT_EQ(v.pid, 0);
}

TEST_F(TokenServerTest, ReapsSlotsWhosePidIsGone) {
  SpawnOptions o;
  o.argv = {"/bin/true"};
  auto child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok());
  const pid_t dead = (*child)->pid();
  ASSERT_EQ(*(*child)->Wait(), 0);
  const Admission gone = Hello(1, dead), alive = Hello(2);
  ASSERT_TRUE(gone.admitted && alive.admitted);
  for (int i = 0; i < config_.reap_every_periods; ++i) env_.Advance(kPeriod);  // periodic reap
  EXPECT_EQ(Slot(gone.welcome.slot_index).state, uint32_t{SLUICE_SLOT_FREE});
  EXPECT_EQ(Slot(alive.welcome.slot_index).state, uint32_t{SLUICE_SLOT_ACTIVE});
  EXPECT_EQ(server_->ReapDeadClients(), 0);
}

// True once thread `tid` of this process is asleep (state S), e.g. inside FUTEX_WAIT.
bool Sleeping(pid_t tid) {
  std::ifstream stat(absl::StrCat("/proc/self/task/", tid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'S';
}

TEST_F(TokenServerTest, RefillWakesAThrottledWaiter) {
  const uint32_t a = Register(1, 0.5, 0.5, false);
  SluiceSlot& s = Slot(a);
  const uint32_t seen = Shared(s.futex_word).load();
  Shared(s.waiters).fetch_add(1);
  std::atomic<pid_t> tid{0};
  long rc = -2;
  std::thread waiter([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    const timespec ten_seconds{10, 0};  // only a missing wake-up waits this long
    rc = syscall(SYS_futex, &s.futex_word, FUTEX_WAIT, seen, &ten_seconds, nullptr, 0);
  });
  while (tid.load() == 0 || !Sleeping(tid.load())) std::this_thread::yield();
  env_.Advance(kPeriod);
  waiter.join();
  Shared(s.waiters).fetch_sub(1);
  EXPECT_EQ(rc, 0) << "FUTEX_WAIT ended by timeout, not by the refill's wake-up";
  EXPECT_EQ(Shared(s.futex_word).load(), seen + 1);
}

}  // namespace
}  // namespace sluice::runtime
