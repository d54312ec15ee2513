// sluice-spin: a saturating GPU test program using only the CUDA driver API, so it runs on a
// real GPU (PTX spin kernel timed with %globaltimer) and on the emulated device (which knows
// "spin" by name). `sluice node share-test` runs one per instance under the interception
// library; tests use it as a second process on the emulated device. Output: JSON lines.
//   --probe                 print the device (name, uuid, sm_count, memory, emulated) and exit
//   --grid N                blocks per kernel (default: the SM count)
//   --block-ns N            time each block spins (default 100000)
//   --batch K               kernels per batch; two batches stay in flight (default 8)
//   --seconds S             run time when --until-ns is absent (default 2)
//   --from-ns T --until-ns T  count completions inside this CLOCK_MONOTONIC window only
//   --mem-mb M              allocate M MiB first and keep it; --hold: then wait for a signal
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda.h>
#include "intercept/emulated/spin_ptx.h"

namespace {

struct Options {
  bool probe = false;
  bool hold = false;
  int grid = 0;
  uint64_t block_ns = 100000;
  int batch = 8;
  double seconds = 2;
  int64_t from_ns = -1;
  int64_t until_ns = -1;
  int64_t mem_mb = 0;
};

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

#define CHECK_CU(call)                                                                   \
  do {                                                                                   \
    CUresult r_ = (call);                                                                \
    if (r_ != CUDA_SUCCESS) {                                                            \
      std::printf("{\"event\":\"error\",\"call\":\"%s\",\"code\":%d}\n", #call, int(r_)); \
      std::fflush(stdout);                                                               \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--probe") o->probe = true;
    else if (a == "--hold") o->hold = true;
    else if (a == "--grid" && has_value) o->grid = std::atoi(argv[++i]);
    else if (a == "--block-ns" && has_value) o->block_ns = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--batch" && has_value) o->batch = std::atoi(argv[++i]);
    else if (a == "--seconds" && has_value) o->seconds = std::atof(argv[++i]);
    else if (a == "--from-ns" && has_value) o->from_ns = std::strtoll(argv[++i], nullptr, 10);
    else if (a == "--until-ns" && has_value) o->until_ns = std::strtoll(argv[++i], nullptr, 10);
    else if (a == "--mem-mb" && has_value) o->mem_mb = std::strtoll(argv[++i], nullptr, 10);
    else return false;
  }
  return o->batch > 0 && o->block_ns > 0 && o->grid >= 0 && o->mem_mb >= 0;
}

int Probe(CUdevice dev) {
  char name[128];
  CUuuid uuid;
  int sms = 0;
  size_t total = 0;
  CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
  CHECK_CU(cuDeviceGetUuid(&uuid, dev));
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK_CU(cuDeviceTotalMem(&total, dev));
  // The emulated driver exports sluiceEmu* extensions; a real one does not.
  const bool emulated = dlsym(RTLD_DEFAULT, "sluiceEmuGetStats") != nullptr;
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  std::printf("{\"event\":\"probe\",\"name\":\"%s\",\"uuid\":\"%s-", name, emulated ? "EMU" : "GPU");
  for (int i = 0; i < 16; ++i) {
    std::printf("%02x%s", b[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
  }
  std::printf("\",\"sm_count\":%d,\"memory_bytes\":%zu,\"emulated\":%s}\n", sms, total,
              emulated ? "true" : "false");
  return 0;
}

int Spin(const Options& o, CUdevice dev) {
  int sms = 0;
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  const unsigned grid = o.grid > 0 ? unsigned(o.grid) : unsigned(sms);
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUdeviceptr mem = 0;
  if (o.mem_mb > 0) CHECK_CU(cuMemAlloc(&mem, size_t(o.mem_mb) << 20));
  CUmodule module;
  CUfunction spin;
  CHECK_CU(cuModuleLoadData(&module, sluice::kSpinPtx));
  CHECK_CU(cuModuleGetFunction(&spin, module, "spin"));
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  uint64_t block_ns = o.block_ns;
  void* params[] = {&block_ns};
  // One small kernel first: whatever the launch path sets up lazily (an interception library's
  // registration) is in place before "ready".
  CHECK_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr));
  CHECK_CU(cuStreamSynchronize(stream));
  std::printf("{\"event\":\"ready\",\"pid\":%d,\"now_ns\":%" PRId64 "}\n", int(getpid()), Now());
  std::fflush(stdout);
  if (o.hold) pause();
  const int64_t start = Now();
  const int64_t from = o.from_ns >= 0 ? o.from_ns : start;
  const int64_t until = o.until_ns >= 0 ? o.until_ns : start + int64_t(o.seconds * 1e9);
  // Two batches in flight: while the device runs batch i, the host waits for batch i - 1 and
  // queues batch i + 1, so the device never idles on the host.
  CUevent done_event[2];
  CHECK_CU(cuEventCreate(&done_event[0], CU_EVENT_DISABLE_TIMING));
  CHECK_CU(cuEventCreate(&done_event[1], CU_EVENT_DISABLE_TIMING));
  int64_t blocks = 0, kernels = 0, first = -1, last = -1;
  for (int64_t i = 0; Now() < until; ++i) {
    for (int k = 0; k < o.batch; ++k) {
      CHECK_CU(cuLaunchKernel(spin, grid, 1, 1, 1, 1, 1, 0, stream, params, nullptr));
    }
    CHECK_CU(cuEventRecord(done_event[i % 2], stream));
    if (i == 0) continue;
    CHECK_CU(cuEventSynchronize(done_event[(i - 1) % 2]));
    const int64_t done = Now();  // batch i - 1 has completed
    if (done < from || done > until) continue;
    if (first < 0) first = done;
    last = done;
    blocks += int64_t{grid} * o.batch;
    kernels += o.batch;
  }
  CHECK_CU(cuStreamSynchronize(stream));
  std::printf("{\"event\":\"result\",\"blocks\":%" PRId64 ",\"kernels\":%" PRId64
              ",\"grid\":%u,\"first_ns\":%" PRId64 ",\"last_ns\":%" PRId64
              ",\"late_start\":%s}\n",
              blocks, kernels, grid, first, last, start > from ? "true" : "false");
  if (mem != 0) CHECK_CU(cuMemFree(mem));
  CHECK_CU(cuEventDestroy(done_event[0]));
  CHECK_CU(cuEventDestroy(done_event[1]));
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: sluice-spin [--probe] [--grid N] [--block-ns N] [--batch K] "
                         "[--seconds S] [--from-ns T --until-ns T] [--mem-mb M [--hold]]\n");
    return 2;
  }
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  return o.probe ? Probe(dev) : Spin(o, dev);
}
