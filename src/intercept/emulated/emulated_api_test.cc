// In-process tests of the emulated driver: device queries, contexts, memory and its capacity,
// copies, modules over registered kernels, asynchronous launches and events, cuGetProcAddress
// and graphs. Time is asserted only as device-model bounds (an event pair around a kernel spans
// at least the kernel's modelled time), never as host speed.
#include <dlfcn.h>

#include <cstring>
#include <vector>

#include "intercept/emulated/emulated_test_util.h"
#include "intercept/emulated/sluice_emu.h"

namespace sluice::intercept::testing {
namespace {

const char kImage[] = ".version 6.0\n.visible .entry spin(.param .u64 p)\n{ ret; }\n"
                      "sluice-emu-kernel fill_u32\nsluice-emu-kernel noop\n";

class EmulatedApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InitEmulated();
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS); }

  CUfunction Function(const char* name) {
    CUmodule m;
    EXPECT_EQ(cuModuleLoadData(&m, kImage), CUDA_SUCCESS);
    CUfunction f = nullptr;
    EXPECT_EQ(cuModuleGetFunction(&f, m, name), CUDA_SUCCESS);
    return f;
  }
  size_t FreeBytes() {
    size_t free_bytes = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, size_t{kTestMemoryMb} << 20);
    return free_bytes;
  }

  CUcontext ctx_ = nullptr;
};

TEST_F(EmulatedApiTest, DescribesOneEmulatedDevice) {
  int count = 0, sms = 0;
  char name[64];
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  ASSERT_EQ(cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "Sluice Emulated GPU");
  ASSERT_EQ(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
  EXPECT_EQ(sms, kTestSms);
  CUuuid uuid;
  ASSERT_EQ(cuDeviceGetUuid(&uuid, 0), CUDA_SUCCESS);
  EXPECT_EQ(static_cast<unsigned char>(uuid.bytes[4]), 0x7e);  // parsed from the hex text
  SluiceEmuStats stats;
  ASSERT_EQ(sluiceEmuGetStats(&stats), CUDA_SUCCESS);
  EXPECT_EQ(std::string(stats.uuid), TestUuid());
  CUdevice dev;
  EXPECT_EQ(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(EmulatedApiTest, CreatedContextIsCurrentAndFreesItsMemoryOnDestroy) {
  const size_t before = FreeBytes();
  CUcontext mine, current;
  ASSERT_EQ(cuCtxCreate(&mine, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, mine);
  CUdeviceptr p;
  ASSERT_EQ(cuMemAlloc(&p, 10 << 20), CUDA_SUCCESS);
  EXPECT_EQ(FreeBytes(), before - (10 << 20));
  ASSERT_EQ(cuCtxDestroy(mine), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx_);  // popped back to the primary context
  EXPECT_EQ(FreeBytes(), before);
}

TEST_F(EmulatedApiTest, CapacityHoldsAcrossAllocationPaths) {
  const size_t before = FreeBytes();
  CUdeviceptr a, b, c, d;
  CUmemoryPool pool;
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&a, 100 << 20), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&b, 60 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&c, 50 << 20, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&d, 40 << 20, pool, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(FreeBytes(), before - (250u << 20));
  CUdeviceptr e;
  EXPECT_EQ(cuMemAlloc(&e, 10 << 20), CUDA_ERROR_OUT_OF_MEMORY);  // 256 MiB device
  EXPECT_EQ(cuMemFree(a + 256), CUDA_ERROR_INVALID_VALUE);        // not a base address
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(b), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(c, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(d, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(FreeBytes(), before);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
}

TEST_F(EmulatedApiTest, VirtualMemoryChargesUntilReleasedAndUnmapped) {
  const size_t before = FreeBytes();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  size_t gran = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  CUmemGenericAllocationHandle h;
  EXPECT_EQ(cuMemCreate(&h, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);  // not granular
  ASSERT_EQ(cuMemCreate(&h, 2 * gran, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(FreeBytes(), before - 2 * gran);
  CUdeviceptr va;
  ASSERT_EQ(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(va, 2 * gran, 0, h, 0), CUDA_SUCCESS);
  CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ASSERT_EQ(cuMemSetAccess(va, 2 * gran, &access, 1), CUDA_SUCCESS);
  const uint32_t in = 0xfeedbeef;
  uint32_t out = 0;
  ASSERT_EQ(cuMemcpyHtoD(va + gran, &in, 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(&out, va + gran, 4), CUDA_SUCCESS);
  EXPECT_EQ(out, in);
  ASSERT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(FreeBytes(), before - 2 * gran);  // still mapped
  EXPECT_EQ(cuMemAddressFree(va, 2 * gran), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemUnmap(va, 2 * gran), CUDA_SUCCESS);
  EXPECT_EQ(FreeBytes(), before);
  EXPECT_EQ(cuMemAddressFree(va, 2 * gran), CUDA_SUCCESS);
}

TEST_F(EmulatedApiTest, CopiesAndKernelBodiesMoveData) {
  CUdeviceptr d, d2;
  ASSERT_EQ(cuMemAlloc(&d, 64 * sizeof(uint32_t)), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&d2, 64 * sizeof(uint32_t)), CUDA_SUCCESS);
  std::vector<uint32_t> host(64, 7), back(64, 0);
  ASSERT_EQ(cuMemcpyHtoD(d, host.data(), 64 * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoD(d2, d, 64 * 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d2, 64 * 4), CUDA_SUCCESS);
  EXPECT_EQ(back, host);
  uint32_t value = 42;
  uint64_t count = 10;
  void* params[] = {&d, &value, &count};
  ASSERT_EQ(cuLaunchKernel(Function("fill_u32"), 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d, 64 * 4), CUDA_SUCCESS);
  EXPECT_EQ(back[9], 42u);
  EXPECT_EQ(back[10], 7u);
  EXPECT_EQ(cuMemcpyHtoD(d, host.data(), 65 * 4), CUDA_ERROR_INVALID_VALUE);  // out of range
  ASSERT_EQ(cuMemFree(d), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(d2), CUDA_SUCCESS);
}

TEST_F(EmulatedApiTest, ModulesResolveOnlyDeclaredRegisteredKernels) {
  CUmodule m;
  CUfunction f;
  ASSERT_EQ(cuModuleLoadData(&m, kImage), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&f, m, "spin"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&f, m, "matmul"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuModuleLoadData(&m, "no kernels here"), CUDA_ERROR_INVALID_IMAGE);
  const uint32_t sizes[] = {8};
  ASSERT_EQ(sluiceEmuRegisterKernel("matmul", 1000, -1, sizes, 1, nullptr, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleLoadData(&m, ".entry matmul(.param .u64 a)"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&f, m, "matmul"), CUDA_SUCCESS);
  EXPECT_EQ(sluiceEmuRegisterKernel("bad", 0, 0, sizes, 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);  // cost parameter out of range
}

TEST_F(EmulatedApiTest, LaunchIsAsynchronousAndEventsSpanTheModelledTime) {
  CUfunction spin = Function("spin");
  CUstream s;
  CUevent start, end;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&start, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&end, 0), CUDA_SUCCESS);
  uint64_t block_ns = 100'000'000;  // 2 waves of 8 SMs: 200 ms of device time
  void* params[] = {&block_ns};
  ASSERT_EQ(cuEventRecord(start, s), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(spin, 2 * kTestSms, 1, 1, 64, 1, 1, 0, s, params, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(end, s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);  // returned long before completion
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(s), CUDA_SUCCESS);
  ASSERT_EQ(cuEventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 199.9f);
  EXPECT_EQ(cuLaunchKernel(spin, 1, 1, 1, 2048, 1, 1, 0, s, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);  // too many threads per block
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(EmulatedApiTest, GetProcAddressHonoursVersionAndStreamFlag) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st;
  ASSERT_EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));
  ASSERT_EQ(cuGetProcAddress_v2("cuLaunchKernel", &fn, 12000,
                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"));
  ASSERT_EQ(cuGetProcAddress_v2("cuLaunchKernel", &fn, 12000, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuLaunchKernel));
  ASSERT_EQ(cuGetProcAddress_v2("cuCtxCreate", &fn, 11040, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(fn, dlsym(RTLD_DEFAULT, "cuCtxCreate_v3"));
  ASSERT_EQ(cuGetProcAddress_v2("cuCtxCreate", &fn, 13000, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuCtxCreate_v4));
  // cuMemGetInfo has no per-thread variant: the flag falls back to the plain entry.
  ASSERT_EQ(cuGetProcAddress_v2("cuMemGetInfo", &fn, 12000,
                                CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemGetInfo_v2));
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 2000, 0, &st), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(cuGetProcAddress_v2("cuNoSuchCall", &fn, 12000, 0, &st), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(cuGetProcAddress_v2("cuStreamGetCtx", &fn, 12050, 0, &st), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);  // newer ABI not emulated: no old one
}

TEST_F(EmulatedApiTest, CapturedGraphReplaysItsKernels) {
  CUfunction spin = Function("spin");
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  uint64_t block_ns = 1000;
  void* params[] = {&block_ns};
  SluiceEmuStats before, after;
  ASSERT_EQ(sluiceEmuGetStats(&before), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cuLaunchKernel(spin, 5, 1, 1, 1, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  }
  block_ns = 999999;  // captured values were copied
  CUgraph g;
  ASSERT_EQ(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  ASSERT_EQ(sluiceEmuGetStats(&after), CUDA_SUCCESS);
  EXPECT_EQ(after.kernels_run, before.kernels_run);  // nothing ran while capturing
  size_t n = 0;
  ASSERT_EQ(cuGraphGetNodes(g, nullptr, &n), CUDA_SUCCESS);
  ASSERT_EQ(n, 3u);
  std::vector<CUgraphNode> nodes(n);
  ASSERT_EQ(cuGraphGetNodes(g, nodes.data(), &n), CUDA_SUCCESS);
  CUDA_KERNEL_NODE_PARAMS p;
  ASSERT_EQ(cuGraphKernelNodeGetParams(nodes[1], &p), CUDA_SUCCESS);
  EXPECT_EQ(p.gridDimX, 5u);
  EXPECT_EQ(*static_cast<uint64_t*>(p.kernelParams[0]), 1000u);
  CUgraphExec exec;
  ASSERT_EQ(cuGraphInstantiate(&exec, g, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  ASSERT_EQ(sluiceEmuGetStats(&after), CUDA_SUCCESS);
  EXPECT_EQ(after.kernels_run - before.kernels_run, 3);
  EXPECT_EQ(after.blocks_run - before.blocks_run, 15);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

}  // namespace
}  // namespace sluice::intercept::testing
