// Memory accounting through libsluice_cuda.so over the fake driver: the limit holds on every
// allocation path, frees (through any free entry point) restore the budget, cuMemGetInfo reports
// the limit, driver failures leave the charge consistent, and the token server's per-slot limit
// and mirror work. A seeded random sequence checks the invariants across all paths at once.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "intercept/testing/child.h"
#include "intercept/testing/fake_driver.h"
#include "intercept/testing/fake_token_server.h"

namespace sluice::intercept {
namespace {

using testing::OpenFakeDriver;
using testing::OpenIntercept;
using testing::RunInChild;
using testing::SetBaseEnv;
using testing::Sym;

constexpr size_t kLimit = 1 << 20;

// One allocation path and the free path that matches it.
struct Path {
  std::string name;
  std::function<CUresult(size_t, unsigned long long*)> alloc;
  std::function<CUresult(unsigned long long)> free;
};

std::vector<Path> Paths(void* lib) {
  auto alloc = Sym<PFN_cuMemAlloc_v3020>(lib, "cuMemAlloc_v2");
  auto managed = Sym<PFN_cuMemAllocManaged_v6000>(lib, "cuMemAllocManaged");
  auto async = Sym<PFN_cuMemAllocAsync_v11020>(lib, "cuMemAllocAsync");
  auto async_ptsz = Sym<PFN_cuMemAllocAsync_v11020_ptsz>(lib, "cuMemAllocAsync_ptsz");
  auto pool = Sym<PFN_cuMemAllocFromPoolAsync_v11020>(lib, "cuMemAllocFromPoolAsync");
  auto pool_ptsz =
      Sym<PFN_cuMemAllocFromPoolAsync_v11020_ptsz>(lib, "cuMemAllocFromPoolAsync_ptsz");
  auto pitch = Sym<PFN_cuMemAllocPitch_v3020>(lib, "cuMemAllocPitch_v2");
  auto create = Sym<PFN_cuMemCreate_v10020>(lib, "cuMemCreate");
  auto free_sync = Sym<PFN_cuMemFree_v3020>(lib, "cuMemFree_v2");
  auto free_async = Sym<PFN_cuMemFreeAsync_v11020>(lib, "cuMemFreeAsync");
  auto free_ptsz = Sym<PFN_cuMemFreeAsync_v11020_ptsz>(lib, "cuMemFreeAsync_ptsz");
  auto release = Sym<PFN_cuMemRelease_v10020>(lib, "cuMemRelease");
  auto by_free = [free_sync](unsigned long long p) {
    return free_sync(p);
  };
  auto by_free_async = [free_async](unsigned long long p) {
    return free_async(p, nullptr);
  };
  auto by_free_ptsz = [free_ptsz](unsigned long long p) {
    return free_ptsz(p, nullptr);
  };
  return {
      {"cuMemAlloc_v2", [=](size_t n, unsigned long long* p) { return alloc(p, n); }, by_free},
      {"cuMemAllocManaged", [=](size_t n, unsigned long long* p) { return managed(p, n, 1); },
       by_free_async},
      {"cuMemAllocAsync", [=](size_t n, unsigned long long* p) { return async(p, n, nullptr); },
       by_free_async},
      {"cuMemAllocAsync_ptsz",
       [=](size_t n, unsigned long long* p) { return async_ptsz(p, n, nullptr); }, by_free_ptsz},
      {"cuMemAllocFromPoolAsync",
       [=](size_t n, unsigned long long* p) { return pool(p, n, nullptr, nullptr); }, by_free},
      {"cuMemAllocFromPoolAsync_ptsz",
       [=](size_t n, unsigned long long* p) { return pool_ptsz(p, n, nullptr, nullptr); },
       by_free_ptsz},
      // Width 1000 is padded by the fake to a 1024-byte pitch: the padding is charged too.
      {"cuMemAllocPitch_v2",
       [=](size_t n, unsigned long long* p) {
         size_t row_pitch = 0;
         return pitch(p, &row_pitch, 1000, (n + 1023) / 1024, 4);
       },
       by_free},
      {"cuMemCreate",
       [=](size_t n, unsigned long long* h) {
         CUmemAllocationProp prop{};
         return create(h, n, &prop, 0);
       },
       [=](unsigned long long h) {
         return release(h);
       }},
  };
}

// Bytes the library reports in use: total - free from cuMemGetInfo (total is the limit).
int64_t ReportedUsed(void* lib) {
  size_t free_bytes = 0;
  size_t total = 0;
  EXPECT_EQ(Sym<PFN_cuMemGetInfo_v3020>(lib, "cuMemGetInfo_v2")(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kLimit);
  return static_cast<int64_t>(total - free_bytes);
}

TEST(MemoryTest, LimitHoldsOnEveryPathAndFreesRestoreIt) {
  RunInChild([] {
    SetBaseEnv();
    setenv("SLUICE_MEM_LIMIT_BYTES", std::to_string(kLimit).c_str(), 1);
    void* lib = OpenIntercept();
    auto* fake = Sym<FakeStateFn>(OpenFakeDriver(), "fake_state")();
    for (const Path& path : Paths(lib)) {
      SCOPED_TRACE(path.name);
      unsigned long long a = 0;
      unsigned long long b = 0;
      ASSERT_EQ(path.alloc(600 << 10, &a), CUDA_SUCCESS);
      EXPECT_STREQ(fake->last_entry.load(), path.name.c_str());
      EXPECT_GE(ReportedUsed(lib), 600 << 10);
      const int64_t allocations = fake->allocations.load();
      EXPECT_EQ(path.alloc(600 << 10, &b), CUDA_ERROR_OUT_OF_MEMORY);
      EXPECT_EQ(fake->allocations.load(), allocations) << "refused before reaching the driver";
      EXPECT_LE(fake->live_bytes.load(), static_cast<int64_t>(kLimit));
      ASSERT_EQ(path.free(a), CUDA_SUCCESS);
      EXPECT_EQ(ReportedUsed(lib), 0);
      ASSERT_EQ(path.alloc(600 << 10, &b), CUDA_SUCCESS) << "the free restored the budget";
      ASSERT_EQ(path.free(b), CUDA_SUCCESS);
      EXPECT_EQ(ReportedUsed(lib), 0);
    }
  });
}

TEST(MemoryTest, RandomSequencesKeepTheInvariants) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    RunInChild([seed] {
      SCOPED_TRACE(::testing::Message() << "seed " << seed);
      SetBaseEnv();
      setenv("SLUICE_MEM_LIMIT_BYTES", std::to_string(kLimit).c_str(), 1);
      void* lib = OpenIntercept();
      auto* fake = Sym<FakeStateFn>(OpenFakeDriver(), "fake_state")();
      const std::vector<Path> paths = Paths(lib);
      std::mt19937 rng(seed);
      struct Live {
        size_t path;
        unsigned long long key;
        int64_t bytes;  // as the fake device holds it
      };
      std::vector<Live> live;
      for (int step = 0; step < 400; ++step) {
        if (live.empty() || rng() % 3 != 0) {
          const size_t path = rng() % paths.size();
          const size_t n = 1 + rng() % (kLimit / 3);
          unsigned long long key = 0;
          const int64_t before = fake->live_bytes.load();
          const CUresult r = paths[path].alloc(n, &key);
          ASSERT_TRUE(r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY) << r;
          if (r == CUDA_SUCCESS)
            live.push_back({path, key, fake->live_bytes.load() - before});
        } else {
          const size_t i = rng() % live.size();
          ASSERT_EQ(paths[live[i].path].free(live[i].key), CUDA_SUCCESS);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
        int64_t model = 0;
        for (const Live& l : live)
          model += l.bytes;
        ASSERT_EQ(ReportedUsed(lib), model) << "step " << step;
        ASSERT_LE(fake->live_bytes.load(), static_cast<int64_t>(kLimit)) << "step " << step;
      }
    });
  }
}

TEST(MemoryTest, DriverFailuresKeepTheChargeConsistent) {
  RunInChild([] {
    SetBaseEnv();
    setenv("SLUICE_MEM_LIMIT_BYTES", std::to_string(kLimit).c_str(), 1);
    void* lib = OpenIntercept();
    auto* fake = Sym<FakeStateFn>(OpenFakeDriver(), "fake_state")();
    auto alloc = Sym<PFN_cuMemAlloc_v3020>(lib, "cuMemAlloc_v2");
    auto free_fn = Sym<PFN_cuMemFree_v3020>(lib, "cuMemFree_v2");
    // The device itself is out of memory: our reservation is returned.
    fake->total_bytes.store(1000);
    CUdeviceptr p = 0;
    EXPECT_EQ(alloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
    fake->total_bytes.store(int64_t{1} << 30);
    EXPECT_EQ(ReportedUsed(lib), 0);
    // A refused free keeps the record; the next free releases it.
    ASSERT_EQ(alloc(&p, 4096), CUDA_SUCCESS);
    fake->fail_next_free.store(1);
    EXPECT_EQ(free_fn(p), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(ReportedUsed(lib), 4096);
    EXPECT_EQ(free_fn(p), CUDA_SUCCESS);
    EXPECT_EQ(ReportedUsed(lib), 0);
    // Memory we never saw allocated (the v1 entry point passes through uncharged) frees
    // without touching the charge.
    unsigned int old_style = 0;
    ASSERT_EQ(Sym<CUresult (*)(unsigned int*, unsigned int)>(lib, "cuMemAlloc")(&old_style, 512),
              CUDA_SUCCESS);
    EXPECT_EQ(ReportedUsed(lib), 0);
    EXPECT_EQ(free_fn(old_style), CUDA_SUCCESS);
    EXPECT_EQ(ReportedUsed(lib), 0);
  });
}

TEST(MemoryTest, GetInfoWithoutLimitIsTheDevicesAnswer) {
  RunInChild([] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    size_t free_bytes = 0;
    size_t total = 0;
    ASSERT_EQ(Sym<PFN_cuMemGetInfo_v3020>(lib, "cuMemGetInfo_v2")(&free_bytes, &total),
              CUDA_SUCCESS);
    EXPECT_EQ(total, size_t{1} << 30);
    EXPECT_EQ(free_bytes, size_t{1} << 30);
  });
}

TEST(MemoryTest, SlotLimitAppliesAndUsageIsMirrored) {
  RunInChild([] {
    SetBaseEnv();
    testing::FakeServerOptions options;
    options.mem_limit_bytes = kLimit / 2;
    auto server = testing::FakeTokenServer::Start(options);
    ASSERT_NE(server, nullptr);
    setenv("SLUICE_TOKEN_SOCKET", server->socket_path().c_str(), 1);
    setenv("SLUICE_GPU_UUID", server->gpu_uuid().c_str(), 1);
    setenv("SLUICE_MEM_LIMIT_BYTES", std::to_string(kLimit).c_str(), 1);  // the larger one
    void* lib = OpenIntercept();
    auto alloc = Sym<PFN_cuMemAlloc_v3020>(lib, "cuMemAlloc_v2");
    CUdeviceptr a = 0;
    CUdeviceptr b = 0;
    ASSERT_EQ(alloc(&a, kLimit / 4), CUDA_SUCCESS);
    EXPECT_EQ(alloc(&b, kLimit / 3), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(server->slot(0)->mem_used_bytes, static_cast<int64_t>(kLimit / 4));
    size_t free_bytes = 0;
    size_t total = 0;
    ASSERT_EQ(Sym<PFN_cuMemGetInfo_v3020>(lib, "cuMemGetInfo_v2")(&free_bytes, &total),
              CUDA_SUCCESS);
    EXPECT_EQ(total, kLimit / 2);
    EXPECT_EQ(free_bytes, kLimit / 4);
    ASSERT_EQ(Sym<PFN_cuMemFree_v3020>(lib, "cuMemFree_v2")(a), CUDA_SUCCESS);
    EXPECT_EQ(server->slot(0)->mem_used_bytes, 0);
    EXPECT_EQ(server->slot(0)->mem_peak_bytes, static_cast<int64_t>(kLimit / 4));
  });
}

}  // namespace
}  // namespace sluice::intercept
