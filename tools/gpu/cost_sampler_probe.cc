// cost_sampler_probe: a standalone prototype of the learning half of time-based tokens
// (docs/time-based-tokens.md), for scripts/gpu-validate.sh. It launches a random mix of kernel
// shapes on one stream; a random 1/P of launches is bracketed by a cuEventRecord pair taken from
// a pre-created pool, and completed pairs are collected with cuEventQuery at later launches
// (never a synchronisation on the launch path). Per key (grid, ns per block) a window-minimum +
// EWMA estimator learns the kernel's GPU time. Afterwards each shape is timed alone (the truth)
// and the host cost of sampled and unsampled launches is compared. Driver API only (the PTX
// spin kernel runs on a real GPU and the emulated device). Prints one JSON line.
//   --launches N (default 4000)   --period P (sample 1 in P on average, default 16)
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "kit_common.h"
#include "intercept/emulated/spin_ptx.h"

namespace {

#define CHECK_CU(call)                                                          \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      std::printf("{\"event\":\"error\",\"call\":%s,\"code\":%d}\n",            \
                  sluice_kit::JsonString(#call).c_str(), static_cast<int>(r_)); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

struct Shape {
  unsigned grid;
  uint64_t block_ns;
};

// Window minimum of the last 4 samples fed into an EWMA with weight 1/8 (integer ns).
class CostEstimate {
 public:
  void Add(int64_t ns) {
    window_[count_ % 4] = ns;
    ++count_;
    int64_t low = window_[0];
    for (int i = 1; i < 4 && i < count_; ++i)
      low = std::min(low, window_[i]);
    cost_ = count_ == 1 ? ns : cost_ + (low - cost_) / 8;
  }
  int64_t cost() const { return cost_; }
  int samples() const { return count_; }

 private:
  int64_t window_[4] = {};
  int64_t cost_ = 0;
  int count_ = 0;
};

struct Pending {
  CUevent start, end;
  int key;
};

// The sampler: a pool of event pairs created up front, the pairs in flight (in stream order),
// and the per-key estimates. Single-threaded here; the library would poll from its own thread.
class Sampler {
 public:
  Sampler(int keys, int pool_pairs, double period) : estimates_(size_t(keys)), period_(period) {
    for (int i = 0; i < pool_pairs; ++i) {
      Pending p{};
      CHECK_CU(cuEventCreate(&p.start, CU_EVENT_DEFAULT));
      CHECK_CU(cuEventCreate(&p.end, CU_EVENT_DEFAULT));
      free_.push_back(p);
    }
    countdown_ = Draw();
  }
  // True when this launch should be sampled: geometric intervals with mean `period`, so the
  // choice cannot alias with a loop of a fixed number of kernels.
  bool Due() {
    if (--countdown_ > 0)
      return false;
    countdown_ = Draw();
    return true;
  }
  // Takes a free pair; false (do not sample) when the pool is empty.
  bool Take(Pending* p) {
    if (free_.empty()) {
      ++pool_empty_;
      return false;
    }
    *p = free_.back();
    free_.pop_back();
    return true;
  }
  void InFlight(const Pending& p) { flight_.push_back(p); }
  // Collects up to `max_queries` completed pairs, oldest first; never waits.
  void Poll(int max_queries) {
    while (!flight_.empty() && max_queries-- > 0) {
      const Pending p = flight_.front();
      const CUresult r = cuEventQuery(p.end);
      if (r == CUDA_ERROR_NOT_READY)
        return;  // later pairs on the stream are not done either
      float ms = 0;
      if (r == CUDA_SUCCESS && cuEventElapsedTime(&ms, p.start, p.end) == CUDA_SUCCESS) {
        estimates_[size_t(p.key)].Add(static_cast<int64_t>(ms * 1e6));
      } else {
        ++dropped_;
      }
      flight_.pop_front();
      free_.push_back(p);
    }
  }
  const CostEstimate& estimate(int key) const { return estimates_[size_t(key)]; }
  int64_t pool_empty() const { return pool_empty_; }
  int64_t dropped() const { return dropped_; }

 private:
  int64_t Draw() {  // 1 + geometric(1/period), from xorshift64
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    const double u = (static_cast<double>(rng_ >> 11) + 1.0) / 9007199254740993.0;
    return 1 + static_cast<int64_t>(std::log(u) / std::log(1.0 - 1.0 / period_));
  }

  std::vector<CostEstimate> estimates_;
  std::vector<Pending> free_;
  std::deque<Pending> flight_;
  double period_;
  int64_t countdown_ = 1;
  uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
  int64_t pool_empty_ = 0, dropped_ = 0;
};

struct Launch {
  CUfunction fn;
  CUstream stream;
  CUresult operator()(const Shape& s) const {
    uint64_t ns = s.block_ns;
    void* params[] = {&ns};
    return cuLaunchKernel(fn, s.grid, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
  }
};

// The mixed workload: shapes in a seeded random order; the workload (not the sampler)
// synchronises every 32 launches so the launch queue never fills and blocks a launch.
void RunMix(const Launch& launch, const std::vector<Shape>& shapes, int launches, Sampler& sampler,
            std::vector<int64_t>* sampled, std::vector<int64_t>* unsampled) {
  uint64_t rng = 42;
  for (int i = 0; i < launches; ++i) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    const int key = static_cast<int>((rng >> 33) % shapes.size());
    sampler.Poll(4);
    Pending p{};
    const int64_t t0 = sluice_kit::NowNs();
    if (sampler.Due() && sampler.Take(&p)) {
      p.key = key;
      CHECK_CU(cuEventRecord(p.start, launch.stream));
      CHECK_CU(launch(shapes[size_t(key)]));
      CHECK_CU(cuEventRecord(p.end, launch.stream));
      sampled->push_back(sluice_kit::NowNs() - t0);
      sampler.InFlight(p);
    } else {
      CHECK_CU(launch(shapes[size_t(key)]));
      unsampled->push_back(sluice_kit::NowNs() - t0);
    }
    if (i % 32 == 31)
      CHECK_CU(cuStreamSynchronize(launch.stream));
  }
  CHECK_CU(cuStreamSynchronize(launch.stream));
  sampler.Poll(1 << 30);
}

// Each shape alone, every launch bracketed and synchronised: the median is the truth.
int64_t TrueCost(const Launch& launch, const Shape& s) {
  CUevent a, b;
  CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<int64_t> ns;
  for (int i = 0; i < 15; ++i) {
    CHECK_CU(cuEventRecord(a, launch.stream));
    CHECK_CU(launch(s));
    CHECK_CU(cuEventRecord(b, launch.stream));
    CHECK_CU(cuEventSynchronize(b));
    float ms = 0;
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    ns.push_back(static_cast<int64_t>(ms * 1e6));
  }
  CHECK_CU(cuEventDestroy(a));
  CHECK_CU(cuEventDestroy(b));
  return sluice_kit::Summarize(ns).median;
}

std::string ShapesJson(const Launch& launch, const std::vector<Shape>& shapes,
                       const Sampler& sampler) {
  std::string out = "[";
  for (size_t k = 0; k < shapes.size(); ++k) {
    const int64_t truth = TrueCost(launch, shapes[k]);
    const CostEstimate& e = sampler.estimate(static_cast<int>(k));
    const double err = truth > 0 ? double(e.cost() - truth) / double(truth) : 0.0;
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"grid\":%u,\"block_ns\":%llu,\"samples\":%d,\"estimate_ns\":%lld,"
                  "\"true_ns\":%lld,\"relative_error\":%.4f}",
                  k ? "," : "", shapes[k].grid, static_cast<unsigned long long>(shapes[k].block_ns),
                  e.samples(), static_cast<long long>(e.cost()), static_cast<long long>(truth),
                  err);
    out += buf;
  }
  return out + "]";
}

}  // namespace

int main(int argc, char** argv) {
  int launches = 4000;
  double period = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--launches")
      launches = std::atoi(argv[i + 1]);
    else if (a == "--period")
      period = std::atof(argv[i + 1]);
    else
      launches = 0;
  }
  if (argc % 2 == 0 || launches <= 0 || period < 1) {
    std::fprintf(stderr, "usage: cost_sampler_probe [--launches N] [--period P]\n");
    return 2;
  }
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  int sms = 0;
  char name[256] = {};
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  CUmodule module;
  Launch launch{};
  CHECK_CU(cuModuleLoadData(&module, sluice::kSpinPtx));
  CHECK_CU(cuModuleGetFunction(&launch.fn, module, "spin"));
  CHECK_CU(cuStreamCreate(&launch.stream, CU_STREAM_NON_BLOCKING));
  const unsigned n = static_cast<unsigned>(sms);
  // Few long blocks, a GPU-wide wave, several short waves, a tiny kernel, two long waves.
  const std::vector<Shape> shapes = {
      {1, 200000}, {n, 20000}, {4 * n, 5000}, {1, 5000}, {2 * n, 50000}};
  Sampler sampler(static_cast<int>(shapes.size()), 64, period);
  std::vector<int64_t> sampled, unsampled;
  RunMix(launch, shapes, launches, sampler, &sampled, &unsampled);
  const std::string shapes_json = ShapesJson(launch, shapes, sampler);
  std::printf(
      "{\"event\":\"cost_sampler_probe\",\"device\":%s,\"sm_count\":%d,"
      "\"launches\":%d,\"period\":%.1f,\"sampled_launch_ns\":%s,"
      "\"unsampled_launch_ns\":%s,\"pool_empty\":%lld,\"dropped\":%lld,"
      "\"shapes\":%s}\n",
      sluice_kit::JsonString(name).c_str(), sms, launches, period,
      sluice_kit::SummaryJson(sluice_kit::Summarize(sampled)).c_str(),
      sluice_kit::SummaryJson(sluice_kit::Summarize(unsampled)).c_str(),
      static_cast<long long>(sampler.pool_empty()), static_cast<long long>(sampler.dropped()),
      shapes_json.c_str());
  CHECK_CU(cuStreamDestroy(launch.stream));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
