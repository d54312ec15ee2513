// Fake driver, part 1: state, test helpers, device queries and cuGetProcAddress. The lookup
// follows the real driver's rules (highest ABI version <= the caller's; per-thread variants when
// asked, else legacy) and answers with the fake's own exports via dlsym on its own handle. Built
// with -Bsymbolic so its references to its own symbols never bind to an interposer.
#include "intercept/testing/fake_driver.h"

#include <dlfcn.h>

#include <cstring>

#include "intercept/testing/fake_driver_internal.h"

namespace sluice::intercept::fake {
namespace {

FakeState g_state;

struct Entry {
  const char* base;
  int version;
  bool ptds;
  const char* symbol;
};

// The ABIs this fake implements, as the real driver would list them.
const Entry kEntries[] = {
    {"cuGetProcAddress", 11030, false, "cuGetProcAddress"},
    {"cuGetProcAddress", 12000, false, "cuGetProcAddress_v2"},
    {"cuInit", 2000, false, "cuInit"},
    {"cuDriverGetVersion", 2020, false, "cuDriverGetVersion"},
    {"cuDeviceGetCount", 2000, false, "cuDeviceGetCount"},
    {"cuCtxGetDevice", 2000, false, "cuCtxGetDevice"},
    {"cuDeviceGetUuid", 11040, false, "cuDeviceGetUuid_v2"},
    {"cuMemAlloc", 2000, false, "cuMemAlloc"},
    {"cuMemAlloc", 3020, false, "cuMemAlloc_v2"},
    {"cuMemAlloc", 99000, false, "cuMemAlloc_v3"},  // an ABI newer than any header we know
    {"cuMemAllocPitch", 3020, false, "cuMemAllocPitch_v2"},
    {"cuMemFree", 3020, false, "cuMemFree_v2"},
    {"cuMemGetInfo", 3020, false, "cuMemGetInfo_v2"},
    {"cuMemAllocManaged", 6000, false, "cuMemAllocManaged"},
    {"cuMemAllocAsync", 11020, false, "cuMemAllocAsync"},
    {"cuMemAllocAsync", 11020, true, "cuMemAllocAsync_ptsz"},
    {"cuMemAllocFromPoolAsync", 11020, false, "cuMemAllocFromPoolAsync"},
    {"cuMemAllocFromPoolAsync", 11020, true, "cuMemAllocFromPoolAsync_ptsz"},
    {"cuMemFreeAsync", 11020, false, "cuMemFreeAsync"},
    {"cuMemFreeAsync", 11020, true, "cuMemFreeAsync_ptsz"},
    {"cuMemCreate", 10020, false, "cuMemCreate"},
    {"cuMemRelease", 10020, false, "cuMemRelease"},
    {"cuLaunchKernel", 4000, false, "cuLaunchKernel"},
    {"cuLaunchKernel", 7000, true, "cuLaunchKernel_ptsz"},
    {"cuLaunchKernelEx", 11060, false, "cuLaunchKernelEx"},
    {"cuLaunchKernelEx", 11060, true, "cuLaunchKernelEx_ptsz"},
    {"cuLaunchCooperativeKernel", 9000, false, "cuLaunchCooperativeKernel"},
    {"cuLaunchCooperativeKernel", 9000, true, "cuLaunchCooperativeKernel_ptsz"},
    {"cuGraphLaunch", 10000, false, "cuGraphLaunch"},
    {"cuGraphLaunch", 10000, true, "cuGraphLaunch_ptsz"},
    {"cuGraphInstantiate", 10000, false, "cuGraphInstantiate"},
    {"cuGraphInstantiate", 11000, false, "cuGraphInstantiate_v2"},
    {"cuGraphInstantiate", 12000, false, "cuGraphInstantiateWithFlags"},
    {"cuGraphInstantiateWithFlags", 11040, false, "cuGraphInstantiateWithFlags"},
    {"cuGraphInstantiateWithParams", 12000, false, "cuGraphInstantiateWithParams"},
    {"cuGraphInstantiateWithParams", 12000, true, "cuGraphInstantiateWithParams_ptsz"},
    {"cuGraphExecDestroy", 10000, false, "cuGraphExecDestroy"},
    {"cuGraphExecUpdate", 10020, false, "cuGraphExecUpdate"},
    {"cuGraphExecUpdate", 12000, false, "cuGraphExecUpdate_v2"},
    {"cuGraphExecKernelNodeSetParams", 10010, false, "cuGraphExecKernelNodeSetParams"},
    {"cuGraphExecKernelNodeSetParams", 12000, false, "cuGraphExecKernelNodeSetParams_v2"},
    {"cuGraphExecNodeSetParams", 12020, false, "cuGraphExecNodeSetParams"},
    {"cuGraphGetNodes", 10000, false, "cuGraphGetNodes"},
    {"cuGraphNodeGetType", 10000, false, "cuGraphNodeGetType"},
    {"cuGraphKernelNodeGetParams", 10000, false, "cuGraphKernelNodeGetParams"},
    {"cuGraphKernelNodeGetParams", 12000, false, "cuGraphKernelNodeGetParams_v2"},
    {"cuGraphChildGraphNodeGetGraph", 10000, false, "cuGraphChildGraphNodeGetGraph"},
    {"cuStreamBeginCapture", 10000, false, "cuStreamBeginCapture"},
    {"cuStreamBeginCapture", 10000, true, "cuStreamBeginCapture_ptsz"},
    {"cuStreamBeginCapture", 10010, false, "cuStreamBeginCapture_v2"},
    {"cuStreamBeginCapture", 10010, true, "cuStreamBeginCapture_v2_ptsz"},
    {"cuStreamBeginCaptureToGraph", 12030, false, "cuStreamBeginCaptureToGraph"},
    {"cuStreamBeginCaptureToGraph", 12030, true, "cuStreamBeginCaptureToGraph_ptsz"},
    {"cuStreamEndCapture", 10000, false, "cuStreamEndCapture"},
    {"cuStreamEndCapture", 10000, true, "cuStreamEndCapture_ptsz"},
    {"cuStreamIsCapturing", 10000, false, "cuStreamIsCapturing"},
    {"cuStreamIsCapturing", 10000, true, "cuStreamIsCapturing_ptsz"},
    {"cuCtxSynchronize", 2000, false, "cuCtxSynchronize"},
    {"cuCtxSynchronize", 13000, false, "cuCtxSynchronize_v2"},
    {"cuStreamSynchronize", 2000, false, "cuStreamSynchronize"},
    {"cuStreamSynchronize", 7000, true, "cuStreamSynchronize_ptsz"},
    {"cuEventSynchronize", 2000, false, "cuEventSynchronize"},
    {"cuMemcpyDtoH", 3020, false, "cuMemcpyDtoH_v2"},
    {"cuMemcpyDtoH", 7000, true, "cuMemcpyDtoH_v2_ptds"},
    {"cuMemcpyDtoHAsync", 3020, false, "cuMemcpyDtoHAsync_v2"},
    {"cuMemcpyDtoHAsync", 7000, true, "cuMemcpyDtoHAsync_v2_ptsz"},
};

void* SelfHandle() {
  static void* handle = [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&fake_state), &info) == 0)
      return static_cast<void*>(nullptr);
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  return handle;
}

const Entry* Best(const char* base, int version, bool ptds, bool* too_new) {
  const Entry* best = nullptr;
  for (const Entry& e : kEntries) {
    if (e.ptds != ptds || std::strcmp(e.base, base) != 0)
      continue;
    if (e.version > version) {
      *too_new = true;
      continue;
    }
    if (best == nullptr || e.version > best->version)
      best = &e;
  }
  return best;
}

CUresult Lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  g_state.gpa_calls.fetch_add(1);
  CUdriverProcAddressQueryResult ignored;
  if (status == nullptr)
    status = &ignored;
  *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == nullptr || pfn == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  bool too_new = false;
  const bool ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const Entry* e = Best(symbol, version, ptds, &too_new);
  if (e == nullptr && ptds)
    e = Best(symbol, version, false, &too_new);
  if (e == nullptr) {
    if (too_new)
      *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = dlsym(SelfHandle(), e->symbol);
  if (*pfn == nullptr)
    return CUDA_ERROR_NOT_FOUND;
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

FakeState& State() {
  return g_state;
}

}  // namespace sluice::intercept::fake

using sluice::intercept::fake::State;

extern "C" __attribute__((visibility("default"))) sluice::intercept::fake::FakeState* fake_state() {
  return &State();
}

FAKE_API(cuGetProcAddress_v2, (const char* symbol, void** pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult* status)) {
  return sluice::intercept::fake::Lookup(symbol, pfn, version, flags, status);
}

FAKE_API(cuGetProcAddress, (const char* symbol, void** pfn, int version, cuuint64_t flags)) {
  return sluice::intercept::fake::Lookup(symbol, pfn, version, flags, nullptr);
}

FAKE_API(cuInit, (unsigned int)) {
  return CUDA_SUCCESS;
}

FAKE_API(cuDriverGetVersion, (int* version)) {
  if (version == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

FAKE_API(cuDeviceGetCount, (int* count)) {
  if (count == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

FAKE_API(cuCtxGetDevice, (CUdevice * device)) {
  if (device == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

FAKE_API(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice)) {
  if (uuid == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 16; ++i)
    uuid->bytes[i] = static_cast<char>(0xa0 + i);
  return CUDA_SUCCESS;
}

// Pass-through probes: many arguments (two on the stack) and float arguments, to check that
// libsluice_cuda.so's assembly stubs forward every argument register and the stack unchanged.
FAKE_API(cuLinkAddData_v2,
         (CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
          unsigned int num_options, CUjit_option* options, void** option_values)) {
  const bool ok = state == reinterpret_cast<CUlinkState>(0x11) && type == CU_JIT_INPUT_FATBINARY &&
                  data == reinterpret_cast<void*>(0x33) && size == 44 && name != nullptr &&
                  std::strcmp(name, "probe") == 0 && num_options == 6 &&
                  options == reinterpret_cast<CUjit_option*>(0x77) &&
                  option_values == reinterpret_cast<void**>(0x88);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_API(cuTexRefSetMipmapLevelClamp, (CUtexref tex, float lo, float hi)) {
  const bool ok = tex == reinterpret_cast<CUtexref>(0x99) && lo == 1.5f && hi == 2.25f;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
