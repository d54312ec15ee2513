// The launch gate through libsluice_cuda.so, with the test acting as the token server
// (FakeTokenServer drives the shared segment by hand): registration, per-launch charges on every
// launch entry point, refunds, blocking on an exhausted budget until a refill, stream capture,
// the fail policies when the server is gone (never a hang: each child runs under alarm()), and
// the time quota of protocol 1.2 (a spent slice waits; fail-open meters limit x q).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#include "intercept/testing/child.h"
#include "intercept/testing/fake_driver.h"
#include "intercept/testing/fake_token_server.h"

namespace sluice::intercept {
namespace {

using testing::FakeServerOptions;
using testing::FakeTokenServer;
using testing::OpenFakeDriver;
using testing::OpenIntercept;
using testing::RunInChild;
using testing::SetBaseEnv;
using testing::Sym;

int64_t Load(const int64_t& v) {
  return std::atomic_ref<int64_t>(const_cast<int64_t&>(v)).load();
}

// A child's view of the library, the fake device and the server.
struct Rig {
  std::unique_ptr<FakeTokenServer> server;
  void* lib = nullptr;
  fake::FakeState* device = nullptr;
  PFN_cuLaunchKernel_v4000 launch = nullptr;

  // Starts the server (unless `server_up` is false), points the library at it and loads it.
  explicit Rig(FakeServerOptions options, bool server_up = true) {
    SetBaseEnv();
    if (server_up) {
      server = FakeTokenServer::Start(options);
      EXPECT_NE(server, nullptr);
      setenv("SLUICE_TOKEN_SOCKET", server->socket_path().c_str(), 1);
      setenv("SLUICE_GPU_UUID", server->gpu_uuid().c_str(), 1);
    }
    lib = OpenIntercept();
    device = Sym<FakeStateFn>(OpenFakeDriver(), "fake_state")();
    launch = Sym<PFN_cuLaunchKernel_v4000>(lib, "cuLaunchKernel");
  }
  CUresult Launch(unsigned x, unsigned y = 1, unsigned z = 1, CUstream s = nullptr,
                  CUfunction f = nullptr) {
    return launch(f, x, y, z, 32, 1, 1, 0, s, nullptr, nullptr);
  }
  SluiceSlot* slot(uint32_t i = 0) const { return server->slot(i); }
  int64_t budget(uint32_t i = 0) const { return Load(slot(i)->budget); }
  // Waits (bounded by the child's alarm) until `n` threads sleep on slot i's futex.
  void AwaitWaiters(uint32_t n, uint32_t i = 0) const {
    while (std::atomic_ref<uint32_t>(slot(i)->waiters).load() < n)
      usleep(500);
  }
};

TEST(GateTest, RegistersOnFirstLaunchAndChargesEveryEntryPoint) {
  RunInChild([] {
    Rig rig(FakeServerOptions{});
    ASSERT_EQ(rig.Launch(10, 2), CUDA_SUCCESS);
    EXPECT_EQ(rig.server->hellos(), 1);
    EXPECT_EQ(rig.server->last_peer_pid(), getpid());
    EXPECT_EQ(rig.slot()->state, static_cast<uint32_t>(SLUICE_SLOT_ACTIVE));
    EXPECT_EQ(rig.budget(), 1000 - 20);
    EXPECT_EQ(Load(rig.slot()->blocks_total), 20);
    EXPECT_EQ(Load(rig.slot()->kernels_total), 1);

    auto ptsz = Sym<PFN_cuLaunchKernel_v7000_ptsz>(rig.lib, "cuLaunchKernel_ptsz");
    auto coop = Sym<PFN_cuLaunchCooperativeKernel_v9000>(rig.lib, "cuLaunchCooperativeKernel");
    auto coop_ptsz =
        Sym<PFN_cuLaunchCooperativeKernel_v9000_ptsz>(rig.lib, "cuLaunchCooperativeKernel_ptsz");
    auto ex = Sym<PFN_cuLaunchKernelEx_v11060>(rig.lib, "cuLaunchKernelEx");
    auto ex_ptsz = Sym<PFN_cuLaunchKernelEx_v11060_ptsz>(rig.lib, "cuLaunchKernelEx_ptsz");
    CUlaunchConfig config{};
    config.gridDimX = 2;
    config.gridDimY = 3;
    config.gridDimZ = 4;
    ASSERT_EQ(ptsz(nullptr, 3, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(coop(nullptr, 5, 1, 1, 1, 1, 1, 0, nullptr, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(coop_ptsz(nullptr, 7, 1, 1, 1, 1, 1, 0, nullptr, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(ex(&config, nullptr, nullptr, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(ex_ptsz(&config, nullptr, nullptr, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 1000 - 20 - 3 - 5 - 7 - 24 - 24);
    EXPECT_EQ(Load(rig.slot()->blocks_total), 20 + 3 + 5 + 7 + 24 + 24);
    EXPECT_EQ(Load(rig.slot()->kernels_total), 6);
    EXPECT_EQ(rig.device->launches.load(), 6);
  });
}

TEST(GateTest, FailedLaunchIsRefunded) {
  RunInChild([] {
    Rig rig(FakeServerOptions{});
    ASSERT_EQ(rig.Launch(1), CUDA_SUCCESS);
    EXPECT_EQ(rig.Launch(50, 1, 1, nullptr, reinterpret_cast<CUfunction>(0xbad)),
              CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(rig.budget(), 999);
    EXPECT_EQ(Load(rig.slot()->blocks_total), 1);
    EXPECT_EQ(Load(rig.slot()->kernels_total), 1);
  });
}

TEST(GateTest, ExhaustedBudgetBlocksUntilTheNextRefill) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 50;
    Rig rig(options);
    ASSERT_EQ(rig.Launch(40), CUDA_SUCCESS);
    ASSERT_EQ(rig.Launch(40), CUDA_SUCCESS);  // overdraws: any budget left admits a launch
    EXPECT_EQ(rig.budget(), -30);
    std::atomic<bool> done{false};
    std::thread blocked([&] {
      EXPECT_EQ(rig.Launch(40), CUDA_SUCCESS);
      done.store(true);
    });
    rig.AwaitWaiters(1);
    EXPECT_FALSE(done.load());
    EXPECT_EQ(rig.device->launches.load(), 2) << "a throttled launch must not reach the driver";
    rig.server->Refill(0, 100);  // the debt carries over: 100 - 30
    blocked.join();
    EXPECT_EQ(rig.device->launches.load(), 3);
    EXPECT_EQ(rig.budget(), 70 - 40);
    EXPECT_EQ(Load(rig.slot()->blocks_total), 120);
  });
}

TEST(GateTest, OneRefillReleasesEveryWaiter) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 0;
    Rig rig(options);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&rig] { EXPECT_EQ(rig.Launch(10), CUDA_SUCCESS); });
    }
    rig.AwaitWaiters(4);
    EXPECT_EQ(rig.device->launches.load(), 0);
    rig.server->Refill(0, 40);
    for (auto& t : threads)
      t.join();
    EXPECT_EQ(rig.device->launches.load(), 4);
    EXPECT_EQ(rig.budget(), 0);
  });
}

TEST(GateTest, LaunchesIntoACapturingStreamAreNotCharged) {
  RunInChild([] {
    Rig rig(FakeServerOptions{});
    void* fake = OpenFakeDriver();
    CUstream capturing = Sym<FakeStreamNewFn>(fake, "fake_stream_new")();
    CUstream other = Sym<FakeStreamNewFn>(fake, "fake_stream_new")();
    auto begin = Sym<PFN_cuStreamBeginCapture_v10010>(rig.lib, "cuStreamBeginCapture_v2");
    auto end = Sym<PFN_cuStreamEndCapture_v10000>(rig.lib, "cuStreamEndCapture");
    auto begin_ptsz =
        Sym<PFN_cuStreamBeginCapture_v10010_ptsz>(rig.lib, "cuStreamBeginCapture_v2_ptsz");
    auto end_ptsz = Sym<PFN_cuStreamEndCapture_v10000_ptsz>(rig.lib, "cuStreamEndCapture_ptsz");
    auto launch_ptsz = Sym<PFN_cuLaunchKernel_v7000_ptsz>(rig.lib, "cuLaunchKernel_ptsz");
    ASSERT_EQ(rig.Launch(1), CUDA_SUCCESS);
    ASSERT_EQ(begin(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(rig.Launch(100, 1, 1, capturing), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 999) << "captured, not run";
    ASSERT_EQ(rig.Launch(10, 1, 1, other), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 989) << "another stream still runs its kernels";
    CUgraph graph = nullptr;
    ASSERT_EQ(end(capturing, &graph), CUDA_SUCCESS);
    ASSERT_EQ(rig.Launch(100, 1, 1, capturing), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 889);
    ASSERT_EQ(begin_ptsz(capturing, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    ASSERT_EQ(launch_ptsz(nullptr, 50, 1, 1, 1, 1, 1, 0, capturing, nullptr, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 889);
    ASSERT_EQ(end_ptsz(capturing, &graph), CUDA_SUCCESS);
    EXPECT_EQ(end_ptsz(capturing, &graph), CUDA_ERROR_ILLEGAL_STATE) << "not capturing";
    ASSERT_EQ(launch_ptsz(nullptr, 50, 1, 1, 1, 1, 1, 0, capturing, nullptr, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 839);
    EXPECT_EQ(rig.device->launches.load(), 6);
  });
}

TEST(GateTest, FailClosedRefusesWhileTheServerIsGoneAndRecovers) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 1;
    Rig rig(options);
    setenv("SLUICE_FAIL_POLICY", "closed", 1);  // read at the first call, below
    setenv("SLUICE_FAIL_TIMEOUT_MS", "20", 1);
    ASSERT_EQ(rig.Launch(1), CUDA_SUCCESS);
    rig.server->RejectAll(SLUICE_REJECT_NO_SLOT);
    rig.server->Stall();
    EXPECT_EQ(rig.Launch(5), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    EXPECT_EQ(rig.device->launches.load(), 1);
    rig.server->Refill(0, 100);  // the server is back: heartbeat and budget
    EXPECT_EQ(rig.Launch(5), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 95);
  });
}

TEST(GateTest, FailOpenMetersItselfAtItsLimit) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 1;
    options.limit_ppm = 500000;
    options.max_tokens = 1000;
    Rig rig(options);
    setenv("SLUICE_FAIL_TIMEOUT_MS", "20", 1);
    ASSERT_EQ(rig.Launch(1), CUDA_SUCCESS);
    rig.server->RejectAll(SLUICE_REJECT_NO_SLOT);
    rig.server->Stall();
    ASSERT_EQ(rig.Launch(100), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 500 - 100) << "refilled locally to limit * max_tokens";
    ASSERT_EQ(rig.Launch(450), CUDA_SUCCESS);  // overdraws to -50
    ASSERT_EQ(rig.Launch(10), CUDA_SUCCESS);   // waits for the next local period at most
    EXPECT_EQ(rig.budget(), 500 - 50 - 10);
    EXPECT_EQ(rig.device->launches.load(), 4);
  });
}

// Time quota (1.2): a spent slice is a zero refill; the launch sleeps through it and runs at
// the refill that opens the next window, never reaching the driver before.
TEST(GateTest, SpentTimeSliceWaitsForTheNextWindow) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 0;
    options.time_quota_ppm = 250000;
    Rig rig(options);
    std::atomic<bool> done{false};
    std::thread blocked([&] {
      EXPECT_EQ(rig.Launch(10), CUDA_SUCCESS);
      done.store(true);
    });
    rig.AwaitWaiters(1);
    for (int period = 0; period < 3; ++period) {  // the rest of the window: no tokens
      rig.server->Refill(0, 0);
      usleep(2000);
      rig.AwaitWaiters(1);
      EXPECT_FALSE(done.load());
    }
    EXPECT_EQ(rig.device->launches.load(), 0);
    rig.server->Refill(0, 100);  // the next window's slice
    blocked.join();
    EXPECT_EQ(rig.device->launches.load(), 1);
    EXPECT_EQ(rig.budget(), 90);
  });
}

TEST(GateTest, FailOpenMetersItselfAtLimitTimesTimeQuotaAndFollowsChanges) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 1;
    options.limit_ppm = 500000;
    options.time_quota_ppm = 300000;
    options.max_tokens = 1000;
    Rig rig(options);
    setenv("SLUICE_FAIL_TIMEOUT_MS", "20", 1);
    ASSERT_EQ(rig.Launch(1), CUDA_SUCCESS);
    rig.server->RejectAll(SLUICE_REJECT_NO_SLOT);
    rig.server->Stall();
    ASSERT_EQ(rig.Launch(100), CUDA_SUCCESS);
    EXPECT_EQ(rig.budget(), 150 - 100) << "refilled locally to limit * q * max_tokens";
    // A live change (the server rewrote the slot before it stalled) applies from the next
    // local period: the budget is overdrawn, so the next launch waits for that refill.
    std::atomic_ref<uint32_t>(rig.slot()->time_quota_ppm).store(800000);
    ASSERT_EQ(rig.Launch(60), CUDA_SUCCESS);  // overdraws to -10
    ASSERT_EQ(rig.Launch(10), CUDA_SUCCESS);  // waits one local period at most
    EXPECT_EQ(rig.budget(), 400 - 10 - 10);
  });
}

TEST(GateTest, NoServerAtStartupFollowsThePolicy) {
  for (const char* policy : {"open", "closed"}) {
    RunInChild([policy] {
      SCOPED_TRACE(policy);
      Rig rig(FakeServerOptions{}, /*server_up=*/false);
      setenv("SLUICE_FAIL_POLICY", policy, 1);
      setenv("SLUICE_TOKEN_SOCKET", "/nonexistent/sluice.sock", 1);
      setenv("SLUICE_GPU_UUID", "GPU-none", 1);
      const bool open = std::string(policy) == "open";
      EXPECT_EQ(rig.Launch(4), open ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
      EXPECT_EQ(rig.device->launches.load(), open ? 1 : 0);
    });
  }
}

TEST(GateTest, RejectedRegistrationRunsUngatedWhenOpen) {
  RunInChild([] {
    FakeServerOptions options;
    options.reject_reason = SLUICE_REJECT_NO_SLOT;
    Rig rig(options);
    EXPECT_EQ(rig.Launch(4), CUDA_SUCCESS);
    EXPECT_EQ(rig.server->hellos(), 1);
    EXPECT_EQ(rig.budget(), 0) << "no slot was charged";
  });
}

TEST(GateTest, ReRegistersWithARestartedServer) {
  RunInChild([] {
    FakeServerOptions options;
    options.initial_budget = 1;
    options.gpu_uuid = "GPU-restart-" + std::to_string(getpid());
    options.socket_path = "/tmp/sluice-restart-" + std::to_string(getpid());
    Rig rig(options);
    setenv("SLUICE_FAIL_TIMEOUT_MS", "20", 1);
    ASSERT_EQ(rig.Launch(1), CUDA_SUCCESS);
    rig.server->Stall();
    rig.server.reset();  // crashed: socket and segment gone (our mapping stays valid)
    options.initial_budget = 1000;
    auto restarted = FakeTokenServer::Start(options);
    ASSERT_NE(restarted, nullptr);
    usleep(30 * 1000);  // past the re-registration rate limit (one try per fail timeout)
    ASSERT_EQ(rig.Launch(10), CUDA_SUCCESS);
    EXPECT_EQ(restarted->hellos(), 1);
    EXPECT_EQ(Load(restarted->slot(0)->budget), 990);
    EXPECT_EQ(Load(restarted->slot(0)->blocks_total), 10);
  });
}

}  // namespace
}  // namespace sluice::intercept
