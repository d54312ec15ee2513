// The hook table through the built libsluice_cuda.so over the fake driver: every hooked symbol is
// exported by us and reachable through cuGetProcAddress by (name, version, flag); lookups pass
// through what we do not wrap (older and unknown newer ABIs, unhooked names); symbolStatus is
// always written; wrappers reach the driver's matching entry; pass-through stubs forward every
// argument, before and after the driver is loaded.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"

#include "intercept/testing/child.h"
#include "intercept/testing/fake_driver.h"

namespace sluice::intercept {
namespace {

using testing::OpenFakeDriver;
using testing::OpenIntercept;
using testing::RunInChild;
using testing::SetBaseEnv;
using testing::Sym;

struct TableRow {
  const char* base;
  const char* symbol;
  int version;
  bool ptds;
};

// The table, straight from hooks.def (the same source the library is generated from).
const TableRow kRows[] = {
#define SLUICE_HOOK(base, sym, ver, ptds, pfn) {#base, #sym, ver, ptds != 0},
#define SLUICE_HOOK_ALIAS(base, sym, ver, ptds) {#base, #sym, ver, ptds != 0},
#include "intercept/hooks.def"
#undef SLUICE_HOOK
#undef SLUICE_HOOK_ALIAS
};

constexpr CUdriverProcAddressQueryResult kUnwritten =
    static_cast<CUdriverProcAddressQueryResult>(77);

std::string Owner(void* p) {
  Dl_info info;
  if (p == nullptr || dladdr(p, &info) == 0 || info.dli_fname == nullptr)
    return "<none>";
  return info.dli_fname;
}

bool IsOurs(void* p) {
  return Owner(p).find("libsluice_cuda.so") != std::string::npos;
}

TEST(HookTableTest, EveryHookedSymbolIsExportedAndResolvableByVersionAndFlag) {
  RunInChild([] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    ASSERT_NE(lib, nullptr);
    auto gpa = Sym<PFN_cuGetProcAddress_v12000>(lib, "cuGetProcAddress_v2");
    ASSERT_TRUE(IsOurs(reinterpret_cast<void*>(gpa)));
    for (const TableRow& row : kRows) {
      SCOPED_TRACE(std::string(row.base) + " v" + std::to_string(row.version) +
                   (row.ptds ? " ptds" : "") + " -> " + row.symbol);
      void* exported = dlsym(lib, row.symbol);
      ASSERT_TRUE(IsOurs(exported)) << Owner(exported);
      void* p = nullptr;
      CUdriverProcAddressQueryResult status = kUnwritten;
      const cuuint64_t flag = row.ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                       : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
      EXPECT_EQ(gpa(row.base, &p, row.version, flag, &status), CUDA_SUCCESS);
      EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
      EXPECT_EQ(p, exported) << Owner(p);
    }
  });
}

struct LookupCase {
  const char* name;
  int version;
  cuuint64_t flags;
  CUresult result;
  CUdriverProcAddressQueryResult status;
  const char* expect_symbol;  // symbol the pointer must be (nullptr: no pointer)
  bool ours;                  // ours or the driver's
};

TEST(HookTableTest, LookupsFollowVersionAndStreamFlag) {
  constexpr cuuint64_t kPtds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  constexpr cuuint64_t kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  const LookupCase cases[] = {
      {"cuMemAlloc", 3020, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc_v2", true},
      {"cuMemAlloc", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc_v2", true},
      {"cuMemAlloc", 2000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc", false},
      // The driver knows an ABI newer than our headers: never hand out the older wrapper.
      {"cuMemAlloc", 99000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc_v3", false},
      {"cuMemAlloc", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuMemAlloc_v2",
       true},
      {"cuLaunchKernel", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuLaunchKernel_ptsz", true},
      {"cuLaunchKernel", 12000, kLegacy, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuLaunchKernel", true},
      {"cuLaunchKernel", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuLaunchKernel",
       true},
      {"cuLaunchKernel", 6000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuLaunchKernel",
       true},
      {"cuGraphLaunch", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuGraphLaunch_ptsz", true},
      {"cuGetProcAddress", 11030, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress",
       true},
      {"cuGetProcAddress", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuGetProcAddress_v2", true},
      {"cuGraphInstantiate", 10000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuGraphInstantiate", true},
      {"cuGraphInstantiate", 11000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuGraphInstantiate_v2", true},
      {"cuGraphInstantiate", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuGraphInstantiateWithFlags", true},
      {"cuStreamBeginCapture", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuStreamBeginCapture_v2_ptsz", true},
      {"cuInit", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, "cuInit", false},
      // Synchronisation points (protocol 1.1): blocking calls are ours, Async copies are not.
      {"cuStreamSynchronize", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuStreamSynchronize_ptsz", true},
      {"cuStreamSynchronize", 12000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuStreamSynchronize", true},
      {"cuCtxSynchronize", 12080, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuCtxSynchronize", true},
      {"cuCtxSynchronize", 13000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuCtxSynchronize_v2", true},
      {"cuEventSynchronize", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuEventSynchronize", true},
      {"cuMemcpyDtoH", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuMemcpyDtoH_v2_ptds", true},
      {"cuMemcpyDtoH", 12000, kLegacy, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuMemcpyDtoH_v2", true},
      {"cuMemcpyDtoHAsync", 12000, kPtds, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS,
       "cuMemcpyDtoHAsync_v2_ptsz", false},
      {"cuMemAllocAsync", 11000, 0, CUDA_ERROR_NOT_FOUND,
       CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, nullptr, false},
      {"cuNoSuchEntryPoint", 12000, 0, CUDA_ERROR_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
       nullptr, false},
      {nullptr, 12000, 0, CUDA_ERROR_INVALID_VALUE, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, nullptr,
       false},
  };
  RunInChild([&cases] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    void* fake = OpenFakeDriver();
    ASSERT_NE(lib, nullptr);
    ASSERT_NE(fake, nullptr);
    auto gpa2 = Sym<PFN_cuGetProcAddress_v12000>(lib, "cuGetProcAddress_v2");
    auto gpa1 = Sym<PFN_cuGetProcAddress_v11030>(lib, "cuGetProcAddress");
    for (const LookupCase& c : cases) {
      SCOPED_TRACE(std::string(c.name ? c.name : "(null)") + " v" + std::to_string(c.version) +
                   " flags " + std::to_string(c.flags));
      void* p = reinterpret_cast<void*>(0x1);
      CUdriverProcAddressQueryResult status = kUnwritten;
      EXPECT_EQ(gpa2(c.name, &p, c.version, c.flags, &status), c.result);
      EXPECT_EQ(status, c.status);
      void* want =
          c.expect_symbol == nullptr ? nullptr : dlsym(c.ours ? lib : fake, c.expect_symbol);
      EXPECT_EQ(p, want) << "got " << Owner(p);
      void* p1 = reinterpret_cast<void*>(0x1);
      EXPECT_EQ(gpa1(c.name, &p1, c.version, c.flags), c.result);
      EXPECT_EQ(p1, want) << "v1 lookup got " << Owner(p1);
    }
  });
}

TEST(HookTableTest, WrappersReachTheMatchingDriverEntry) {
  RunInChild([] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    auto* state = Sym<FakeStateFn>(OpenFakeDriver(), "fake_state")();
    auto gpa = Sym<PFN_cuGetProcAddress_v12000>(lib, "cuGetProcAddress_v2");
    const cuuint64_t kPtds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    struct {
      const char* name;
      cuuint64_t flags;
      const char* driver_entry;
    } launches[] = {{"cuLaunchKernel", 0, "cuLaunchKernel"},
                    {"cuLaunchKernel", kPtds, "cuLaunchKernel_ptsz"},
                    {"cuLaunchCooperativeKernel", 0, "cuLaunchCooperativeKernel"},
                    {"cuLaunchCooperativeKernel", kPtds, "cuLaunchCooperativeKernel_ptsz"}};
    for (const auto& l : launches) {
      void* p = nullptr;
      ASSERT_EQ(gpa(l.name, &p, 12000, l.flags, nullptr), CUDA_SUCCESS);
      // Both launch ABIs share a prefix; the cooperative one ignores the trailing argument.
      auto fn = reinterpret_cast<PFN_cuLaunchKernel_v4000>(p);
      ASSERT_EQ(fn(nullptr, 2, 3, 4, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
      EXPECT_STREQ(state->last_entry.load(), l.driver_entry);
    }
    for (cuuint64_t flags : {cuuint64_t{0}, kPtds}) {
      void* p = nullptr;
      ASSERT_EQ(gpa("cuLaunchKernelEx", &p, 12000, flags, nullptr), CUDA_SUCCESS);
      CUlaunchConfig config{};
      config.gridDimX = config.gridDimY = config.gridDimZ = 1;
      ASSERT_EQ(
          reinterpret_cast<PFN_cuLaunchKernelEx_v11060>(p)(&config, nullptr, nullptr, nullptr),
          CUDA_SUCCESS);
      EXPECT_STREQ(state->last_entry.load(),
                   flags != 0 ? "cuLaunchKernelEx_ptsz" : "cuLaunchKernelEx");
    }
    EXPECT_EQ(state->launched_blocks.load(), 4 * 24 + 2);
  });
}

void CallProbes(void* lib, const char* when) {
  SCOPED_TRACE(when);
  auto link_add = Sym<CUresult (*)(CUlinkState, CUjitInputType, void*, size_t, const char*,
                                   unsigned int, CUjit_option*, void**)>(lib, "cuLinkAddData_v2");
  auto clamp = Sym<CUresult (*)(CUtexref, float, float)>(lib, "cuTexRefSetMipmapLevelClamp");
  ASSERT_TRUE(IsOurs(reinterpret_cast<void*>(link_add)));
  ASSERT_TRUE(IsOurs(reinterpret_cast<void*>(clamp)));
  EXPECT_EQ(link_add(reinterpret_cast<CUlinkState>(0x11), CU_JIT_INPUT_FATBINARY,
                     reinterpret_cast<void*>(0x33), 44, "probe", 6,
                     reinterpret_cast<CUjit_option*>(0x77), reinterpret_cast<void**>(0x88)),
            CUDA_SUCCESS);
  EXPECT_EQ(clamp(reinterpret_cast<CUtexref>(0x99), 1.5f, 2.25f), CUDA_SUCCESS);
  EXPECT_EQ(clamp(reinterpret_cast<CUtexref>(0x99), 1.5f, 2.0f), CUDA_ERROR_INVALID_VALUE);
}

TEST(PassthroughTest, StubsForwardAllArgumentsBeforeAndAfterLoading) {
  RunInChild([] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    ASSERT_NE(lib, nullptr);
    CallProbes(lib, "first call loads the driver through the resolver");
    CallProbes(lib, "driver loaded: direct tail jump");
    auto version = Sym<CUresult (*)(int*)>(lib, "cuDriverGetVersion");
    int v = 0;
    EXPECT_EQ(version(&v), CUDA_SUCCESS);
    EXPECT_EQ(v, CUDA_VERSION);
    // Declared in the headers but missing from this driver: a clean error, not a crash.
    EXPECT_EQ(Sym<CUresult (*)()>(lib, "cuProfilerStart")(), CUDA_ERROR_NOT_FOUND);
  });
}

TEST(PassthroughTest, ExportsEveryDriverSymbolAProgramMayLinkAgainst) {
  RunInChild([] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    for (const char* name : {"cuInit", "cuGetExportTable", "cuCtxCreate_v2", "cuCtxCreate_v4",
                             "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyAsync_ptsz",
                             "cuProfilerStart", "cuMemAlloc", "cuStreamQuery_ptsz"}) {
      EXPECT_TRUE(IsOurs(dlsym(lib, name))) << name;
    }
  });
}

}  // namespace
}  // namespace sluice::intercept
