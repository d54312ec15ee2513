// launch_bench: host-side cost of one kernel launch through the CUDA driver API (cuLaunchKernel
// or cuLaunchKernelEx of an empty PTX kernel), for scripts/gpu-validate.sh, which runs it with
// and without libsluice_cuda.so and reports the difference. Driver API only, so it runs on a
// real GPU and on the emulated device alike. Prints one JSON line ("launch_bench" or "error").
//   --entry kernel|ex   launch entry point (default kernel)
//   --launches N        timed launches per pass (default 20000); --batch B per sync (default 250)
//   --warmup W          untimed launches first (default 2000); --grid G blocks (default 1)
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kit_common.h"

namespace {

// The same PTX runs on a real GPU (JIT-compiled) and on the emulated device (known by name).
const char kNoopPtx[] = R"(
.version 6.0
.target sm_50
.address_size 64
.visible .entry noop()
{
  ret;
}
)";

struct Options {
  std::string entry = "kernel";
  int launches = 20000;
  int batch = 250;
  int warmup = 2000;
  unsigned grid = 1;
};

#define CHECK_CU(call)                                                          \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      std::printf("{\"event\":\"error\",\"call\":%s,\"code\":%d}\n",            \
                  sluice_kit::JsonString(#call).c_str(), static_cast<int>(r_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--entry")
      o->entry = v;
    else if (a == "--launches")
      o->launches = std::atoi(v);
    else if (a == "--batch")
      o->batch = std::atoi(v);
    else if (a == "--warmup")
      o->warmup = std::atoi(v);
    else if (a == "--grid")
      o->grid = static_cast<unsigned>(std::atoi(v));
    else
      return false;
  }
  return argc % 2 == 1 && (o->entry == "kernel" || o->entry == "ex") && o->launches > 0 &&
         o->batch > 0 && o->warmup >= 0 && o->grid > 0;
}

struct Launcher {
  CUfunction fn;
  CUstream stream;
  unsigned grid;
  bool ex;

  CUresult operator()() const {
    if (!ex)
      return cuLaunchKernel(fn, grid, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr);
    CUlaunchConfig config = {};
    config.gridDimX = grid;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = config.blockDimY = config.blockDimZ = 1;
    config.hStream = stream;
    return cuLaunchKernelEx(&config, fn, nullptr, nullptr);
  }
};

// Cost of the timing itself: two clock reads back to back.
sluice_kit::Summary ClockOverhead() {
  std::vector<int64_t> v(20000);
  for (int64_t& x : v) {
    const int64_t t0 = sluice_kit::NowNs();
    x = sluice_kit::NowNs() - t0;
  }
  return sluice_kit::Summarize(v);
}

// Pass 1: every launch timed on its own (the distribution: median, p99).
std::vector<int64_t> TimeEachLaunch(const Launcher& launch, const Options& o) {
  std::vector<int64_t> ns;
  ns.reserve(static_cast<size_t>(o.launches));
  while (static_cast<int>(ns.size()) < o.launches) {
    for (int i = 0; i < o.batch && static_cast<int>(ns.size()) < o.launches; ++i) {
      const int64_t t0 = sluice_kit::NowNs();
      CHECK_CU(launch());
      ns.push_back(sluice_kit::NowNs() - t0);
    }
    CHECK_CU(cuStreamSynchronize(launch.stream));
  }
  return ns;
}

// Pass 2: whole batches timed (no clock read between launches): host ns per launch per batch,
// and the GPU time per kernel from events around each batch.
void TimeBatches(const Launcher& launch, const Options& o, std::vector<int64_t>* host_ns,
                 std::vector<int64_t>* gpu_ns) {
  CUevent start, stop;
  CHECK_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  for (int done = 0; done < o.launches; done += o.batch) {
    CHECK_CU(cuEventRecord(start, launch.stream));
    const int64_t t0 = sluice_kit::NowNs();
    for (int i = 0; i < o.batch; ++i)
      CHECK_CU(launch());
    const int64_t t1 = sluice_kit::NowNs();
    CHECK_CU(cuEventRecord(stop, launch.stream));
    CHECK_CU(cuEventSynchronize(stop));
    float ms = 0;
    CHECK_CU(cuEventElapsedTime(&ms, start, stop));
    host_ns->push_back((t1 - t0) / o.batch);
    gpu_ns->push_back(static_cast<int64_t>(ms * 1e6 / o.batch));
  }
  CHECK_CU(cuEventDestroy(start));
  CHECK_CU(cuEventDestroy(stop));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: launch_bench [--entry kernel|ex] [--launches N] [--batch B] "
                 "[--warmup W] [--grid G]\n");
    return 2;
  }
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  char name[256] = {};
  int driver_version = 0;
  CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
  CHECK_CU(cuDriverGetVersion(&driver_version));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUmodule module;
  Launcher launch{};
  CHECK_CU(cuModuleLoadData(&module, kNoopPtx));
  CHECK_CU(cuModuleGetFunction(&launch.fn, module, "noop"));
  CHECK_CU(cuStreamCreate(&launch.stream, CU_STREAM_NON_BLOCKING));
  launch.grid = o.grid;
  launch.ex = o.entry == "ex";
  for (int i = 0; i < o.warmup; ++i)
    CHECK_CU(launch());
  CHECK_CU(cuStreamSynchronize(launch.stream));

  const sluice_kit::Summary clock = ClockOverhead();
  std::vector<int64_t> each = TimeEachLaunch(launch, o);
  std::vector<int64_t> batch_host, batch_gpu;
  TimeBatches(launch, o, &batch_host, &batch_gpu);
  const std::string device = name;
  std::printf(
      "{\"event\":\"launch_bench\",\"api\":\"driver\",\"entry\":\"%s\",\"device\":%s,"
      "\"emulated\":%s,\"driver_version\":%d,\"grid\":%u,\"launches\":%d,\"batch\":%d,"
      "\"clock_overhead_ns\":%s,\"per_launch_ns\":%s,\"batch_host_ns_per_launch\":%s,"
      "\"batch_gpu_ns_per_kernel\":%s,\"mapped\":%s}\n",
      launch.ex ? "cuLaunchKernelEx" : "cuLaunchKernel", sluice_kit::JsonString(device).c_str(),
      device.find("Sluice Emulated") != std::string::npos ? "true" : "false", driver_version,
      o.grid, o.launches, o.batch, sluice_kit::SummaryJson(clock).c_str(),
      sluice_kit::SummaryJson(sluice_kit::Summarize(each)).c_str(),
      sluice_kit::SummaryJson(sluice_kit::Summarize(batch_host)).c_str(),
      sluice_kit::SummaryJson(sluice_kit::Summarize(batch_gpu)).c_str(),
      sluice_kit::MappedJson(sluice_kit::MappedLibraries()).c_str());
  CHECK_CU(cuStreamDestroy(launch.stream));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
