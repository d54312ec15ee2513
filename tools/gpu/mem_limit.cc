// mem_limit: checks libsluice_cuda.so's device-memory limit (SLUICE_MEM_LIMIT_BYTES) on every
// allocation path the kit covers, for scripts/gpu-validate.sh: cuMemGetInfo reports the limit as
// total, and cuMemAlloc, cuMemAllocAsync (the device's default pool), cuMemAllocFromPoolAsync (a
// pool of our own) and cuMemCreate each allocate chunks up to the limit and then get
// CUDA_ERROR_OUT_OF_MEMORY; a single allocation larger than the limit fails at once. VMM entry
// points come from cuGetProcAddress (the emulated device has none: reported "unsupported").
// Prints JSON lines: "mem_info", one "mem_path" per path, "mem_summary". Exit 0 when all pass.
//   --limit-bytes L  (default $SLUICE_MEM_LIMIT_BYTES; required)   --chunk-bytes C
//   --paths alloc,async,pool,create (default all)
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kit_common.h"

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

#define CHECK_CU(call)                                                          \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      std::printf("{\"event\":\"error\",\"call\":%s,\"code\":%d}\n",            \
                  sluice_kit::JsonString(#call).c_str(), static_cast<int>(r_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

struct Options {
  int64_t limit = 0;
  int64_t chunk = 0;
  std::string paths = "alloc,async,pool,create";
};

bool Parse(int argc, char** argv, Options* o) {
  if (const char* env = std::getenv("SLUICE_MEM_LIMIT_BYTES"))
    o->limit = std::atoll(env);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--limit-bytes")
      o->limit = std::atoll(argv[i + 1]);
    else if (a == "--chunk-bytes")
      o->chunk = std::atoll(argv[i + 1]);
    else if (a == "--paths")
      o->paths = argv[i + 1];
    else
      return false;
  }
  // Default chunk: about a seventh of the limit in whole MiB, so the limit is not a multiple.
  if (o->chunk == 0)
    o->chunk = std::max<int64_t>(2 * kMiB, (o->limit / 7) / kMiB * kMiB);
  return argc % 2 == 1 && o->limit > 0 && o->chunk > 0;
}

// One allocation path: allocate `size` bytes (returning a handle to free) and free a handle.
struct Path {
  std::string name;
  std::function<CUresult(int64_t size, uint64_t* handle)> alloc;
  std::function<CUresult(uint64_t handle)> free;
  std::function<void()> settle;  // after frees (stream sync); may be empty
  int64_t granularity = 1;
};

struct Outcome {
  int64_t allocated = 0, chunk = 0, free_at_peak = 0, free_after = 0;
  int chunks = 0, error = 0, oversize_error = 0;
  bool pass = false;
  std::string detail;
};

int64_t RoundUp(int64_t x, int64_t g) {
  return (x + g - 1) / g * g;
}

int64_t FreeBytes() {
  size_t free_bytes = 0, total = 0;
  CHECK_CU(cuMemGetInfo(&free_bytes, &total));
  return static_cast<int64_t>(free_bytes);
}

// Fills chunks until the first failure (or a guard past the limit), then frees everything.
Outcome Exercise(const Path& p, const Options& o) {
  Outcome r;
  r.chunk = RoundUp(o.chunk, p.granularity);
  const int max_chunks = static_cast<int>(o.limit / r.chunk) + 2;
  std::vector<uint64_t> handles;
  CUresult err = CUDA_SUCCESS;
  while (static_cast<int>(handles.size()) < max_chunks) {
    uint64_t h = 0;
    err = p.alloc(r.chunk, &h);
    if (err != CUDA_SUCCESS)
      break;
    handles.push_back(h);
    r.allocated += r.chunk;
  }
  r.chunks = static_cast<int>(handles.size());
  r.error = static_cast<int>(err);
  r.free_at_peak = FreeBytes();
  for (uint64_t h : handles)
    CHECK_CU(p.free(h));
  if (p.settle)
    p.settle();
  uint64_t big = 0;
  const CUresult over = p.alloc(RoundUp(o.limit + 1, p.granularity), &big);
  r.oversize_error = static_cast<int>(over);
  if (over == CUDA_SUCCESS)
    CHECK_CU(p.free(big));
  if (p.settle)
    p.settle();
  r.free_after = FreeBytes();
  std::vector<std::string> why;
  if (err != CUDA_ERROR_OUT_OF_MEMORY)
    why.push_back("limit not hit with OUT_OF_MEMORY");
  if (r.allocated > o.limit)
    why.push_back("allocated past the limit");
  if (r.allocated + r.chunk <= o.limit)
    why.push_back("stopped a whole chunk below the limit");
  if (r.free_at_peak > o.limit - r.allocated)
    why.push_back("cuMemGetInfo free above limit-used");
  if (over != CUDA_ERROR_OUT_OF_MEMORY)
    why.push_back("oversize allocation not refused");
  if (r.free_after <= r.free_at_peak && r.allocated > 0)
    why.push_back("frees not returned");
  r.pass = why.empty();
  for (const std::string& w : why)
    r.detail += (r.detail.empty() ? "" : "; ") + w;
  return r;
}

template <typename Fn>
Fn Proc(const char* name) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (cuGetProcAddress(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) !=
          CUDA_SUCCESS ||
      status != CU_GET_PROC_ADDRESS_SUCCESS) {
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

void Report(const std::string& name, const Outcome& r, const Options& o) {
  std::printf(
      "{\"event\":\"mem_path\",\"path\":\"%s\",\"status\":\"%s\",\"limit_bytes\":%lld,"
      "\"chunk_bytes\":%lld,\"chunks\":%d,\"allocated_bytes\":%lld,\"error\":%d,"
      "\"oversize_error\":%d,\"free_at_peak\":%lld,\"free_after\":%lld,\"detail\":%s}\n",
      name.c_str(), r.pass ? "pass" : "fail", static_cast<long long>(o.limit),
      static_cast<long long>(r.chunk), r.chunks, static_cast<long long>(r.allocated), r.error,
      r.oversize_error, static_cast<long long>(r.free_at_peak),
      static_cast<long long>(r.free_after), sluice_kit::JsonString(r.detail).c_str());
}

void ReportUnsupported(const std::string& name, const std::string& why) {
  std::printf("{\"event\":\"mem_path\",\"path\":\"%s\",\"status\":\"unsupported\",\"detail\":%s}\n",
              name.c_str(), sluice_kit::JsonString(why).c_str());
}

}  // namespace

namespace {

using MemCreateFn = CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                                 unsigned long long);
using MemReleaseFn = CUresult (*)(CUmemGenericAllocationHandle);
using GranularityFn = CUresult (*)(size_t*, const CUmemAllocationProp*,
                                   CUmemAllocationGranularity_flags);

CUmemAllocationProp DeviceProp(CUdevice dev) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}

uint64_t Handle(CUdeviceptr p) {
  return static_cast<uint64_t>(p);
}

void RunStreamOrdered(CUdevice dev, const Options& o, bool own_pool, bool* all_pass) {
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUmemoryPool pool = nullptr;
  if (own_pool) {
    CUmemPoolProps props = {};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    CHECK_CU(cuMemPoolCreate(&pool, &props));
  }
  Path p;
  p.name = own_pool ? "cuMemAllocFromPoolAsync" : "cuMemAllocAsync";
  p.alloc = [&](int64_t size, uint64_t* h) {
    CUdeviceptr d = 0;
    const CUresult r = own_pool ? cuMemAllocFromPoolAsync(&d, size_t(size), pool, stream)
                                : cuMemAllocAsync(&d, size_t(size), stream);
    *h = Handle(d);
    return r;
  };
  p.free = [&](uint64_t h) {
    return cuMemFreeAsync(static_cast<CUdeviceptr>(h), stream);
  };
  p.settle = [&] {
    CHECK_CU(cuStreamSynchronize(stream));
  };
  const Outcome r = Exercise(p, o);
  Report(p.name, r, o);
  *all_pass &= r.pass;
  if (pool != nullptr)
    CHECK_CU(cuMemPoolDestroy(pool));
  CHECK_CU(cuStreamDestroy(stream));
}

void RunMemCreate(CUdevice dev, const Options& o, bool* all_pass) {
  const auto create = Proc<MemCreateFn>("cuMemCreate");
  const auto release = Proc<MemReleaseFn>("cuMemRelease");
  const auto granularity = Proc<GranularityFn>("cuMemGetAllocationGranularity");
  if (create == nullptr || release == nullptr || granularity == nullptr) {
    ReportUnsupported("cuMemCreate", "the driver has no virtual memory management entry points");
    return;
  }
  const CUmemAllocationProp prop = DeviceProp(dev);
  size_t g = 0;
  CHECK_CU(granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  Path p;
  p.name = "cuMemCreate";
  p.granularity = static_cast<int64_t>(g);
  p.alloc = [&](int64_t size, uint64_t* h) {
    CUmemGenericAllocationHandle handle = 0;
    const CUresult r = create(&handle, size_t(size), &prop, 0);
    *h = static_cast<uint64_t>(handle);
    return r;
  };
  p.free = [&](uint64_t h) {
    return release(static_cast<CUmemGenericAllocationHandle>(h));
  };
  const Outcome r = Exercise(p, o);
  Report(p.name, r, o);
  *all_pass &= r.pass;
}

// cuMemGetInfo's total must be min(limit, device memory) before anything is allocated.
bool CheckInfo(CUdevice dev, const Options& o) {
  size_t device_total = 0, free_bytes = 0, total = 0;
  CHECK_CU(cuDeviceTotalMem(&device_total, dev));
  CHECK_CU(cuMemGetInfo(&free_bytes, &total));
  const int64_t expected = std::min<int64_t>(o.limit, static_cast<int64_t>(device_total));
  const bool pass =
      static_cast<int64_t>(total) == expected && static_cast<int64_t>(free_bytes) <= expected;
  std::printf(
      "{\"event\":\"mem_info\",\"status\":\"%s\",\"limit_bytes\":%lld,"
      "\"device_total_bytes\":%zu,\"reported_total_bytes\":%zu,"
      "\"reported_free_bytes\":%zu}\n",
      pass ? "pass" : "fail", static_cast<long long>(o.limit), device_total, total, free_bytes);
  return pass;
}

bool Wants(const Options& o, const char* path) {
  return ("," + o.paths + ",").find(std::string(",") + path + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: mem_limit [--limit-bytes L (default $SLUICE_MEM_LIMIT_BYTES)] "
                 "[--chunk-bytes C] [--paths alloc,async,pool,create]\n");
    return 2;
  }
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  char name[256] = {};
  CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
  bool all_pass = CheckInfo(dev, o);
  if (Wants(o, "alloc")) {
    Path p;
    p.name = "cuMemAlloc";
    p.alloc = [](int64_t size, uint64_t* h) {
      CUdeviceptr d = 0;
      const CUresult r = cuMemAlloc(&d, size_t(size));
      *h = Handle(d);
      return r;
    };
    p.free = [](uint64_t h) {
      return cuMemFree(static_cast<CUdeviceptr>(h));
    };
    const Outcome r = Exercise(p, o);
    Report(p.name, r, o);
    all_pass &= r.pass;
  }
  if (Wants(o, "async"))
    RunStreamOrdered(dev, o, /*own_pool=*/false, &all_pass);
  if (Wants(o, "pool"))
    RunStreamOrdered(dev, o, /*own_pool=*/true, &all_pass);
  if (Wants(o, "create"))
    RunMemCreate(dev, o, &all_pass);
  std::printf("{\"event\":\"mem_summary\",\"device\":%s,\"status\":\"%s\",\"mapped\":%s}\n",
              sluice_kit::JsonString(name).c_str(), all_pass ? "pass" : "fail",
              sluice_kit::MappedJson(sluice_kit::MappedLibraries()).c_str());
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  return all_pass ? 0 : 1;
}
