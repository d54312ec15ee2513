// RegistrationServer over a real Unix socket on a LoopEnv: SO_PEERCRED pid recorded for a child
// process, its slot and memory released when it is killed, version and GPU rejects, uid
// denial, and live updates through the control message. The child is this test binary
// re-executed in client mode (see kClientMode), so it holds a real socket like the intercept.
#include "runtime/agent/registration_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "runtime/agent/agent_client.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/common/subprocess.h"

namespace sluice::runtime {
namespace {

// Client mode: SLUICE_TEST_CLIENT="<socket> <gpu uuid> <instance> <mem bytes>". Registers
// (claiming pid 1 in the hello), charges the memory in its slot as the intercept would, prints
// "slot <index>" and waits to be killed.
const bool kClientMode = [] {
  const char* spec = std::getenv("SLUICE_TEST_CLIENT");
  if (spec == nullptr) return false;
  std::vector<std::string> f = absl::StrSplit(spec, ' ');
  int64_t instance = 0, mem = 0;
  if (f.size() != 4 || !absl::SimpleAtoi(f[2], &instance) || !absl::SimpleAtoi(f[3], &mem)) _exit(2);
  SluiceHello h = MakeHello(f[1], instance, -1);
  h.pid = 1;
  auto r = SendHello(f[0], h);
  if (!r.ok() || !r->welcomed) _exit(3);
  const int fd = shm_open(r->welcome.shm_name, O_RDWR, 0);
  void* p = mmap(nullptr, r->welcome.shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fd < 0 || p == MAP_FAILED) _exit(4);
  auto* header = static_cast<SluiceShmHeader*>(p);
  Shared(SluiceShmSlots(header)[r->welcome.slot_index].mem_used_bytes).store(mem);
  std::printf("slot %u\n", r->welcome.slot_index);
  std::fflush(stdout);
  pause();
  _exit(0);
}();

class RegistrationServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    uuid_ = absl::StrCat("GPU-regtest-", getpid(), "-", ++counter);
    path_ = absl::StrCat("/tmp/sluice-regtest-", getpid(), "-", counter, ".sock");
    loop_ = *LoopEnv::Create();
    TokenServerConfig c;
    c.gpu_uuid = uuid_;
    c.max_tokens = 1000;
    server_ = *TokenServer::Create(*loop_, c, *MakeGpuController("dilu", c.period));
    loop_->RunSync([this] { server_->Start(); });
    RegistrationOptions o;
    o.socket_path = path_;
    o.allowed_uids = allowed_;
    auto r = RegistrationServer::Create(*loop_, o);
    ASSERT_TRUE(r.ok()) << r.status();
    reg_ = std::move(*r);
    reg_->AddGpu(*server_);
  }
  void TearDown() override {
    reg_.reset();
    server_->Stop();
    loop_->Stop();
  }
  // Polls until `pred` holds (the server acts on its own loop thread), up to 10 s.
  template <typename Pred>
  bool Eventually(Pred pred) {
    for (int i = 0; i < 10000 && !pred(); ++i) usleep(1000);
    return pred();
  }

  std::string uuid_, path_;
  std::vector<uid_t> allowed_;
  std::unique_ptr<LoopEnv> loop_;
  std::unique_ptr<TokenServer> server_;
  std::unique_ptr<RegistrationServer> reg_;
};

TEST_F(RegistrationServerTest, RecordsPeerPidAndReleasesTheSlotOfAKilledClient) {
  SpawnOptions o;
  o.argv = {"/proc/self/exe"};
  o.env = {{"SLUICE_TEST_CLIENT", absl::StrCat(path_, " ", uuid_, " 5 ", 64 << 20)}};
  auto child = Subprocess::Spawn(o);
  ASSERT_TRUE(child.ok());
  auto line = (*child)->ReadLine(absl::Seconds(30));
  ASSERT_TRUE(line.ok()) << line.status();
  uint32_t slot = 0;
  ASSERT_TRUE(absl::SimpleAtoi(line->substr(5), &slot)) << *line;
  SlotView v = server_->Slots()[slot];
  EXPECT_EQ(v.pid, (*child)->pid()) << "SO_PEERCRED pid, not the hello's claim of 1";
  EXPECT_EQ(v.instance, common::InstanceId(5));
  EXPECT_EQ(v.state, uint32_t{SLUICE_SLOT_ACTIVE});
  EXPECT_EQ(v.mem_used_bytes, 64 << 20);
  (*child)->Kill(SIGKILL);
  ASSERT_EQ(*(*child)->Wait(), 128 + SIGKILL);
  EXPECT_TRUE(Eventually([&] { return server_->Slots()[slot].state == SLUICE_SLOT_FREE; }));
  EXPECT_EQ(server_->Slots()[slot].mem_used_bytes, 0);
}

TEST_F(RegistrationServerTest, RejectsOtherVersionsAndUnknownGpus) {
  SluiceHello h = MakeHello(uuid_, 1, -1);
  h.version_major = SLUICE_PROTO_MAJOR + 1;
  auto r = SendHello(path_, h);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->welcomed);
  EXPECT_EQ(r->reject.reason, SLUICE_REJECT_VERSION);
  EXPECT_NE(std::string(r->reject.detail).find("client"), std::string::npos);
  r = SendHello(path_, MakeHello("GPU-nobody", 1, -1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reject.reason, SLUICE_REJECT_UNKNOWN_GPU);
}

TEST_F(RegistrationServerTest, HangUpRetiresAndControlUpdatesTheLiveSlot) {
  auto r = SendHello(path_, MakeHello(uuid_, 9, -1));
  ASSERT_TRUE(r.ok() && r->welcomed);
  const uint32_t slot = r->welcome.slot_index;
  EXPECT_EQ(server_->Slots()[slot].pid, getpid());
  InstanceSpec spec;
  spec.quota = {0.2, 0.4};
  spec.slo_sensitive = false;
  ASSERT_TRUE(SendInstanceUpdate(path_, uuid_, common::InstanceId(9), spec).ok());
  EXPECT_EQ(server_->Slots()[slot].quota, (core::SmQuota{0.2, 0.4}));
  EXPECT_FALSE(server_->Slots()[slot].slo_sensitive);
  spec.quota = {0.2, 0.4, 0.35};  // 1.2: the time quota travels in the update
  ASSERT_TRUE(SendInstanceUpdate(path_, uuid_, common::InstanceId(9), spec).ok());
  EXPECT_EQ(server_->Slots()[slot].quota, (core::SmQuota{0.2, 0.4, 0.35}));
  spec.quota = {0.5, 0.4};
  EXPECT_TRUE(absl::IsInvalidArgument(
      SendInstanceUpdate(path_, uuid_, common::InstanceId(9), spec)));
  EXPECT_TRUE(absl::IsNotFound(SendInstanceUpdate(path_, "GPU-x", common::InstanceId(9), {})));
  close(r->fd);  // a clean exit looks the same as a crash: EOF
  EXPECT_TRUE(Eventually([&] { return server_->Slots()[slot].state == SLUICE_SLOT_FREE; }));
}

class DeniedUidTest : public RegistrationServerTest {
 protected:
  void SetUp() override {
    allowed_ = {getuid() + 1};
    RegistrationServerTest::SetUp();
  }
};

TEST_F(DeniedUidTest, RejectsUidsNotAllowed) {
  auto r = SendHello(path_, MakeHello(uuid_, 1, -1));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->welcomed);
  EXPECT_EQ(r->reject.reason, SLUICE_REJECT_DENIED);
}

}  // namespace
}  // namespace sluice::runtime
