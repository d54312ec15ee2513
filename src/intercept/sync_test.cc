// Synchronisation points through libsluice_cuda.so over the fake driver and FakeTokenServer:
// every blocking sync entry point (direct export or cuGetProcAddress lookup) adds one to the
// slot's sync_points under protocol 1.1; Async copies, failed calls, 1.0 servers and
// unregistered processes do not; a sync call never registers by itself.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

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

constexpr CUdeviceptr kSrc = 0x1000;

struct SyncRig {
  std::unique_ptr<FakeTokenServer> server;
  void* lib = nullptr;
  fake::FakeState* device = nullptr;

  explicit SyncRig(FakeServerOptions options, bool server_up = true) {
    SetBaseEnv();
    if (server_up) {
      server = FakeTokenServer::Start(options);
      EXPECT_NE(server, nullptr);
      setenv("SLUICE_TOKEN_SOCKET", server->socket_path().c_str(), 1);
      setenv("SLUICE_GPU_UUID", server->gpu_uuid().c_str(), 1);
    }
    lib = OpenIntercept();
    device = Sym<FakeStateFn>(OpenFakeDriver(), "fake_state")();
  }
  // A launch registers the process with the server.
  CUresult Launch() {
    auto launch = Sym<PFN_cuLaunchKernel_v4000>(lib, "cuLaunchKernel");
    return launch(nullptr, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
  }
  int64_t SyncPoints() const {
    return std::atomic_ref<int64_t>(server->slot(0)->sync_points).load();
  }
  // Calls each blocking sync export once; returns how many returned CUDA_SUCCESS.
  int CallEverySyncExport() {
    char buf[16];
    const CUresult results[] = {
        Sym<PFN_cuCtxSynchronize_v2000>(lib, "cuCtxSynchronize")(),
        Sym<PFN_cuCtxSynchronize_v13000>(lib, "cuCtxSynchronize_v2")(nullptr),
        Sym<PFN_cuStreamSynchronize_v2000>(lib, "cuStreamSynchronize")(nullptr),
        Sym<PFN_cuStreamSynchronize_v7000_ptsz>(lib, "cuStreamSynchronize_ptsz")(nullptr),
        Sym<PFN_cuEventSynchronize_v2000>(lib, "cuEventSynchronize")(nullptr),
        Sym<PFN_cuMemcpyDtoH_v3020>(lib, "cuMemcpyDtoH_v2")(buf, kSrc, sizeof(buf)),
        Sym<PFN_cuMemcpyDtoH_v7000_ptds>(lib, "cuMemcpyDtoH_v2_ptds")(buf, kSrc, sizeof(buf)),
    };
    int ok = 0;
    for (CUresult r : results)
      ok += r == CUDA_SUCCESS ? 1 : 0;
    return ok;
  }
  // The two Async device-to-host copies (pass-through stubs).
  void CallAsyncCopies() {
    char buf[16];
    EXPECT_EQ(Sym<PFN_cuMemcpyDtoHAsync_v3020>(lib, "cuMemcpyDtoHAsync_v2")(buf, kSrc, 16, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(Sym<PFN_cuMemcpyDtoHAsync_v7000_ptsz>(lib, "cuMemcpyDtoHAsync_v2_ptsz")(buf, kSrc, 16,
                                                                                      nullptr),
              CUDA_SUCCESS);
  }
};

TEST(SyncPointsTest, EveryBlockingSyncCountsOnceAndAsyncCopiesDoNot) {
  RunInChild([] {
    SyncRig rig(FakeServerOptions{});
    ASSERT_EQ(rig.Launch(), CUDA_SUCCESS);
    ASSERT_EQ(rig.server->hellos(), 1);
    EXPECT_EQ(rig.SyncPoints(), 0);
    ASSERT_EQ(rig.CallEverySyncExport(), 7);
    EXPECT_EQ(rig.device->syncs.load(), 7);  // each reached the driver exactly once
    EXPECT_EQ(rig.SyncPoints(), 7);
    rig.CallAsyncCopies();
    EXPECT_EQ(rig.device->syncs.load(), 9);
    EXPECT_EQ(rig.SyncPoints(), 7);
    // A sync the driver fails is no iteration boundary.
    rig.device->fail_next_sync.store(1);
    EXPECT_NE(Sym<PFN_cuStreamSynchronize_v2000>(rig.lib, "cuStreamSynchronize")(nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.SyncPoints(), 7);
    // The launch path does not touch the counter.
    ASSERT_EQ(rig.Launch(), CUDA_SUCCESS);
    EXPECT_EQ(rig.SyncPoints(), 7);
  });
}

TEST(SyncPointsTest, LookupsReturnTheCountingWrappers) {
  RunInChild([] {
    SyncRig rig(FakeServerOptions{});
    ASSERT_EQ(rig.Launch(), CUDA_SUCCESS);
    auto gpa = Sym<PFN_cuGetProcAddress_v12000>(rig.lib, "cuGetProcAddress_v2");
    constexpr cuuint64_t kPtds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    void* p = nullptr;
    ASSERT_EQ(gpa("cuStreamSynchronize", &p, 12000, kPtds, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(p, dlsym(rig.lib, "cuStreamSynchronize_ptsz"));
    ASSERT_EQ(reinterpret_cast<PFN_cuStreamSynchronize_v7000_ptsz>(p)(nullptr), CUDA_SUCCESS);
    EXPECT_STREQ(rig.device->last_sync.load(), "cuStreamSynchronize_ptsz");
    ASSERT_EQ(gpa("cuMemcpyDtoH", &p, 12000, 0, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(p, dlsym(rig.lib, "cuMemcpyDtoH_v2"));
    char buf[8] = {};
    ASSERT_EQ(reinterpret_cast<PFN_cuMemcpyDtoH_v3020>(p)(buf, kSrc, sizeof(buf)), CUDA_SUCCESS);
    EXPECT_EQ(buf[7], 0x5a);  // the copy really ran
    EXPECT_EQ(rig.SyncPoints(), 2);
    ASSERT_EQ(gpa("cuMemcpyDtoHAsync", &p, 12000, 0, nullptr), CUDA_SUCCESS);
    EXPECT_NE(p, dlsym(rig.lib, "cuMemcpyDtoHAsync_v2"));  // the driver's own entry
  });
}

TEST(SyncPointsTest, AVersionOneZeroServerSeesNoCounting) {
  RunInChild([] {
    FakeServerOptions options;
    options.welcome_minor = 0;
    SyncRig rig(options);
    ASSERT_EQ(rig.Launch(), CUDA_SUCCESS);
    ASSERT_EQ(rig.server->hellos(), 1);
    EXPECT_EQ(rig.CallEverySyncExport(), 7);
    EXPECT_EQ(rig.device->syncs.load(), 7);
    EXPECT_EQ(rig.SyncPoints(), 0);
  });
}

TEST(SyncPointsTest, SyncNeverRegistersAndPassesThroughWhenUnregistered) {
  RunInChild([] {
    SyncRig rig(FakeServerOptions{});
    EXPECT_EQ(rig.CallEverySyncExport(), 7);
    EXPECT_EQ(rig.server->hellos(), 0);
    EXPECT_EQ(rig.device->syncs.load(), 7);
    EXPECT_EQ(rig.SyncPoints(), 0);
  });
  RunInChild([] {
    SyncRig rig(FakeServerOptions{}, /*server_up=*/false);
    ASSERT_EQ(rig.Launch(), CUDA_SUCCESS);
    EXPECT_EQ(rig.CallEverySyncExport(), 7);
    EXPECT_EQ(rig.device->syncs.load(), 7);
  });
}

}  // namespace
}  // namespace sluice::intercept
