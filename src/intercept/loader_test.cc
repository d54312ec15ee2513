// Loading the real driver: the self-check (a libcuda.so.1 that is this library is never used),
// the search along the loader's path, the missing-driver error, and the preload case the CUDA
// runtime relies on (dlopen("libcuda.so.1") + dlsym("cuGetProcAddress") must reach us). The
// cases that need LD_PRELOAD / LD_LIBRARY_PATH set at process start run as re-executed probes.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

#include "intercept/testing/child.h"
#include "intercept/testing/fake_driver.h"

namespace sluice::intercept {
namespace {

using testing::IsProbe;
using testing::OpenIntercept;
using testing::ProbeOk;
using testing::RunInChild;
using testing::RunProbe;
using testing::SetBaseEnv;
using testing::Sym;

bool InLib(void* p, const char* lib_file) {
  Dl_info info;
  return p != nullptr && dladdr(p, &info) != 0 && info.dli_fname != nullptr &&
         std::string(info.dli_fname).find(lib_file) != std::string::npos;
}

TEST(LoaderTest, UsesTheConfiguredDriver) {
  RunInChild([] {
    SetBaseEnv();
    void* lib = OpenIntercept();
    int v = 0;
    EXPECT_EQ(Sym<CUresult (*)(int*)>(lib, "cuDriverGetVersion")(&v), CUDA_SUCCESS);
    EXPECT_EQ(v, CUDA_VERSION);
    EXPECT_NE(dlopen(SLUICE_FAKE_DRIVER_PATH, RTLD_NOW | RTLD_NOLOAD), nullptr);
  });
}

TEST(LoaderTest, MissingDriverIsAnErrorNotACrash) {
  RunInChild([] {
    SetBaseEnv();
    setenv("SLUICE_REAL_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    void* lib = OpenIntercept();
    int v = 0;
    const CUresult r = Sym<CUresult (*)(int*)>(lib, "cuDriverGetVersion")(&v);
    if (r == CUDA_SUCCESS)
      GTEST_SKIP() << "this machine has a CUDA driver on the search path";
    EXPECT_EQ(r, CUDA_ERROR_NOT_INITIALIZED);
    CUdeviceptr p = 0;
    EXPECT_EQ(Sym<PFN_cuMemAlloc_v3020>(lib, "cuMemAlloc_v2")(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    EXPECT_EQ(Sym<PFN_cuGetProcAddress_v12000>(lib, "cuGetProcAddress_v2")("cuLaunchKernel", &fn,
                                                                           12000, 0, &status),
              CUDA_ERROR_NOT_FOUND);
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  });
}

// SLUICE_REAL_LIBCUDA names this very library and "libcuda.so.1" resolves to it too (our
// SONAME): both are rejected, and the search along LD_LIBRARY_PATH finds the fake driver.
TEST(LoaderTest, NeverUsesItselfAndSearchesTheLoaderPath) {
  RunProbe("SelfCheckThenSearch", {{"SLUICE_REAL_LIBCUDA", SLUICE_INTERCEPT_LIB_PATH},
                                   {"LD_LIBRARY_PATH", SLUICE_FAKE_DRIVER_DIR}});
}

TEST(InterceptProbe, DISABLED_SelfCheckThenSearch) {
  if (!IsProbe("SelfCheckThenSearch"))
    GTEST_SKIP();
  void* lib = OpenIntercept();
  ASSERT_NE(lib, nullptr);
  int v = 0;
  EXPECT_EQ(Sym<CUresult (*)(int*)>(lib, "cuDriverGetVersion")(&v), CUDA_SUCCESS);
  EXPECT_EQ(v, CUDA_VERSION);
  EXPECT_NE(dlopen(SLUICE_FAKE_DRIVER_PATH, RTLD_NOW | RTLD_NOLOAD), nullptr);
  ProbeOk();
}

// What the CUDA runtime does under LD_PRELOAD: dlopen("libcuda.so.1"), dlsym the entry point,
// then fetch everything through it. All of it must land in the interception library.
TEST(LoaderTest, PreloadCatchesTheRuntimesLookup) {
  RunProbe("RuntimeStyleLookup", {{"LD_PRELOAD", SLUICE_INTERCEPT_LIB_PATH},
                                  {"LD_LIBRARY_PATH", SLUICE_FAKE_DRIVER_DIR},
                                  {"SLUICE_REAL_LIBCUDA", ""}});
}

TEST(InterceptProbe, DISABLED_RuntimeStyleLookup) {
  if (!IsProbe("RuntimeStyleLookup"))
    GTEST_SKIP();
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(driver, nullptr) << dlerror();
  auto gpa = Sym<PFN_cuGetProcAddress_v12000>(driver, "cuGetProcAddress_v2");
  EXPECT_TRUE(InLib(reinterpret_cast<void*>(gpa), "libsluice_cuda.so"));
  void* launch = nullptr;
  ASSERT_EQ(gpa("cuLaunchKernel", &launch, 12000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(InLib(launch, "libsluice_cuda.so"));
  ASSERT_EQ(reinterpret_cast<PFN_cuLaunchKernel_v4000>(launch)(nullptr, 3, 1, 1, 1, 1, 1, 0,
                                                               nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  // The real (fake) driver was found along LD_LIBRARY_PATH and saw the launch.
  void* fake = dlopen(SLUICE_FAKE_DRIVER_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  EXPECT_EQ(Sym<FakeStateFn>(fake, "fake_state")()->launched_blocks.load(), 3);
  // Programs linked with -lcuda bind to the preloaded exports too.
  EXPECT_TRUE(InLib(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), "libsluice_cuda.so"));
  ProbeOk();
}

}  // namespace
}  // namespace sluice::intercept
