// Per-launch cost of libsluice_cuda.so's fast path over the fake driver's own cost:
//   BM_LaunchDirect    the fake driver's cuLaunchKernel called directly (baseline)
//   BM_LaunchUngated   through the library with no token server (pass-through path)
//   BM_LaunchGated     through the library, registered, budget never exhausted (the fast path:
//                      one fetch_sub on the slot budget, two relaxed adds after the launch)
// Added latency = BM_LaunchGated - BM_LaunchDirect. Run with repetitions and read the medians:
//   build-intercept/src/intercept/intercept_bench --benchmark_repetitions=15
//       --benchmark_report_aggregates_only=true
// The two library instances are two copies of the .so (separate files load as separate
// objects), so one process holds an ungated and a registered instance.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "intercept/testing/fake_token_server.h"

namespace sluice::intercept {
namespace {

struct BenchRig {
  std::unique_ptr<testing::FakeTokenServer> server;
  PFN_cuLaunchKernel_v4000 direct = nullptr;
  PFN_cuLaunchKernel_v4000 ungated = nullptr;
  PFN_cuLaunchKernel_v4000 gated = nullptr;
  SluiceSlot* slot = nullptr;
};

// Copies the library so that it loads as a separate instance with its own configuration.
void* LoadCopy(const std::string& copy) {
  const std::string cmd = std::string("cp ") + SLUICE_INTERCEPT_LIB_PATH + " " + copy;
  if (std::system(cmd.c_str()) != 0) return nullptr;
  return dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
}

PFN_cuLaunchKernel_v4000 LaunchOf(void* lib) {
  return lib == nullptr ? nullptr
                        : reinterpret_cast<PFN_cuLaunchKernel_v4000>(dlsym(lib, "cuLaunchKernel"));
}

BenchRig* Rig() {
  static BenchRig* rig = [] {
    auto* r = new BenchRig();
    setenv("SLUICE_REAL_LIBCUDA", SLUICE_FAKE_DRIVER_PATH, 1);
    setenv("SLUICE_FAIL_TIMEOUT_MS", "3600000", 1);
    r->direct = LaunchOf(dlopen(SLUICE_FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL));
    const std::string base = "/tmp/sluice-bench-" + std::to_string(getpid());
    // Ungated instance: initialised (first call) before any token socket is configured.
    r->ungated = LaunchOf(LoadCopy(base + "-ungated.so"));
    if (r->ungated != nullptr) r->ungated(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    testing::FakeServerOptions options;
    options.initial_budget = int64_t{1} << 60;
    r->server = testing::FakeTokenServer::Start(options);
    if (r->server != nullptr) {
      setenv("SLUICE_TOKEN_SOCKET", r->server->socket_path().c_str(), 1);
      setenv("SLUICE_GPU_UUID", r->server->gpu_uuid().c_str(), 1);
      r->gated = LaunchOf(LoadCopy(base + "-gated.so"));
      if (r->gated != nullptr) r->gated(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
      r->slot = r->server->slot(0);
    }
    std::remove((base + "-ungated.so").c_str());  // mapped copies stay valid
    std::remove((base + "-gated.so").c_str());
    return r;
  }();
  return rig;
}

void RunLaunches(benchmark::State& state, PFN_cuLaunchKernel_v4000 launch) {
  if (launch == nullptr) {
    state.SkipWithError("library or fake driver failed to load");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(launch(nullptr, 64, 2, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr));
  }
}

void BM_LaunchDirect(benchmark::State& state) { RunLaunches(state, Rig()->direct); }
void BM_LaunchUngated(benchmark::State& state) { RunLaunches(state, Rig()->ungated); }
void BM_LaunchGated(benchmark::State& state) {
  BenchRig* rig = Rig();
  if (rig->slot != nullptr && rig->slot->state != SLUICE_SLOT_ACTIVE) {
    state.SkipWithError("gated instance did not register");
    return;
  }
  RunLaunches(state, rig->gated);
}

BENCHMARK(BM_LaunchDirect);
BENCHMARK(BM_LaunchUngated);
BENCHMARK(BM_LaunchGated);
// Several threads of one process share one slot (one cache line): the contended case.
BENCHMARK(BM_LaunchGated)->Threads(2)->UseRealTime();
BENCHMARK(BM_LaunchDirect)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace sluice::intercept
