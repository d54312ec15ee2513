// Tests of `sluice node share-test` and of the token server end to end on the emulated device
// with the real interception library: two saturating processes at limits 0.3 / 0.7 get kernel
// throughput within +-0.05 of 3 : 7, and a crashed worker's slot and memory charge are
// released. Real processes and real time: assertions carry tolerances, never timings. Skipped
// when libsluice_cuda.so or the emulated driver were not built (no CUDA headers).
#include "runtime/node_cli/share_test.h"

#include <signal.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/agent/controller_factory.h"
#include "runtime/agent/registration_server.h"
#include "runtime/node_cli/worker_env.h"

namespace sluice::runtime {
namespace {

ShareTestOptions Emulated() {
  ShareTestOptions o;
  o.device = "emulated";
  return o;
}

// The emulated device and the interception library, or a reason to skip.
std::unique_ptr<WorkerEnv> EmulatedEnv(const ShareTestOptions& o, std::string* why) {
  auto env = WorkerEnv::Create(o);
  if (!env.ok()) {
    *why = std::string(env.status().message());
    return nullptr;
  }
  if (access((*env)->intercept_lib().c_str(), F_OK) != 0) {
    *why = "libsluice_cuda.so not built";
    return nullptr;
  }
  return std::move(*env);
}

TEST(ShareTestOptionsTest, RejectsBadOptions) {
  ShareTestOptions o;
  o.device = "tpu";
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShareTestOptions(o)));
  o = ShareTestOptions();
  o.limits = {0.5, 1.5};
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShareTestOptions(o)));
  o = ShareTestOptions();
  o.period = absl::Microseconds(100);
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateShareTestOptions(o)));
  EXPECT_TRUE(ValidateShareTestOptions(ShareTestOptions()).ok());
}

TEST(ShareTestOptionsTest, SharesNormalise) {
  EXPECT_EQ(Shares({1, 3}), (std::vector<double>{0.25, 0.75}));
  EXPECT_EQ(Shares({0, 0}), (std::vector<double>{0, 0}));
}

TEST(ShareTestEmulatedTest, TwoSaturatingProcessesSplitThroughputThreeToSeven) {
  ShareTestOptions o = Emulated();
  o.limits = {0.3, 0.7};
  o.duration = absl::Seconds(3);
  std::string why;
  if (EmulatedEnv(o, &why) == nullptr) GTEST_SKIP() << why;
  auto r = RunShareTest(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->device, "emulated");
  EXPECT_EQ(r->device_name, "Sluice Emulated GPU");
  EXPECT_EQ(r->registered, 2) << "both workers must hold a token-server slot";
  ASSERT_EQ(r->measured.size(), 2u);
  EXPECT_NEAR(r->measured[0], 0.3, 0.05) << "blocks " << r->blocks[0] << " / " << r->blocks[1];
  EXPECT_NEAR(r->measured[1], 0.7, 0.05);
  EXPECT_LE(r->max_abs_error, 0.05);
}

TEST(ShareTestEmulatedTest, CrashedWorkerReleasesItsSlotAndMemory) {
  std::string why;
  std::unique_ptr<WorkerEnv> env = EmulatedEnv(Emulated(), &why);
  if (env == nullptr) GTEST_SKIP() << why;
  auto probe = env->Spawn({"--probe"}, false);
  ASSERT_TRUE(probe.ok());
  auto p = ReadEvent(**probe, "probe", absl::Seconds(30));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string uuid = p->value("uuid", std::string());
  env->set_gpu_uuid(uuid);
  auto loop = *LoopEnv::Create();
  TokenServerConfig c;
  c.gpu_uuid = uuid;
  c.max_tokens = 10000;
  auto server = *TokenServer::Create(*loop, c, *MakeGpuController("dilu", c.period));
  loop->RunSync([&] { server->Start(); });
  RegistrationOptions ro;
  ro.socket_path = env->socket_path();
  auto reg = *RegistrationServer::Create(*loop, ro);
  reg->AddGpu(*server);

  auto worker = env->Spawn({"--mem-mb", "64", "--hold"}, /*preload=*/true, /*instance=*/3);
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE(ReadEvent(**worker, "ready", absl::Seconds(30)).ok());
  const auto held = [&] {
    for (const SlotView& v : server->Slots()) {
      if (v.state == SLUICE_SLOT_ACTIVE && v.instance == common::InstanceId(3)) return v;
    }
    return SlotView{};
  }();
  EXPECT_EQ(held.pid, (*worker)->pid()) << "SO_PEERCRED pid of the worker";
  EXPECT_EQ(held.mem_used_bytes, 64 << 20) << "the interception library charges its slot";
  (*worker)->Kill(SIGKILL);
  ASSERT_EQ(*(*worker)->Wait(), 128 + SIGKILL);
  bool freed = false;
  for (int i = 0; i < 10000 && !freed; ++i) {  // the server notices the hang-up on its loop
    freed = server->Slots()[held.index].state == SLUICE_SLOT_FREE;
    if (!freed) usleep(1000);
  }
  EXPECT_TRUE(freed);
  EXPECT_EQ(server->Slots()[held.index].mem_used_bytes, 0);
  reg.reset();
  server->Stop();
  loop->Stop();
}

}  // namespace
}  // namespace sluice::runtime
