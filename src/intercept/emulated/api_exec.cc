// Emulated driver API: modules over registered kernels, function lookup and kernel launches.
// A launch computes its device time from the grid and the kernel's per-block cost, reserves it
// on the shared device timeline (blocking only while the device queue is full) and returns; the
// stream's completion time moves to the kernel's end, which synchronisation waits for.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "intercept/emulated/emu_state.h"

namespace emu = sluice::intercept::emu;

namespace {

constexpr size_t kMaxImageBytes = size_t{64} << 20;

CUresult LoadImage(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  std::vector<std::string> entries =
      emu::ParseImageEntries(static_cast<const char*>(image), kMaxImageBytes);
  if (entries.empty()) return CUDA_ERROR_INVALID_IMAGE;
  auto* m = new CUmod_st;
  m->ctx = ctx;
  m->entries = std::move(entries);
  e.modules.insert(m);
  *module = m;
  return CUDA_SUCCESS;
}

// Reads the cost parameter: from kernelParams, or from an `extra` parameter buffer laid out
// with natural alignment. Returns false when it cannot be found.
bool CostParam(const emu::Kernel& k, const emu::LaunchArgs& a, uint64_t* out) {
  if (a.params != nullptr) {
    std::memcpy(out, a.params[k.cost_param], sizeof(*out));
    return true;
  }
  const char* buf = nullptr;
  size_t size = 0;
  for (void** x = a.extra; x != nullptr && *x != CU_LAUNCH_PARAM_END; x += 2) {
    if (x[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = static_cast<const char*>(x[1]);
    if (x[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<size_t*>(x[1]);
  }
  size_t off = 0;
  for (int i = 0; i < k.cost_param; ++i) {
    const size_t sz = k.param_sizes[i];
    off = (off + sz - 1) / sz * sz + sz;
  }
  off = (off + 7) / 8 * 8;
  if (buf == nullptr || off + 8 > size) return false;
  std::memcpy(out, buf + off, sizeof(*out));
  return true;
}

}  // namespace

namespace sluice::intercept::emu {

CUresult Launch(const LaunchArgs& a, bool ptsz, bool cooperative) {
  const uint64_t blocks = uint64_t{a.grid[0]} * a.grid[1] * a.grid[2];
  const uint64_t threads = uint64_t{a.block[0]} * a.block[1] * a.block[2];
  if (blocks == 0 || threads == 0 || threads > 1024 || a.block[2] > 64) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (a.params != nullptr && a.extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  Kernel k;
  int64_t not_before;
  Emu* ep = Get();
  if (ep == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Emu& e = *ep;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    CUctx_st* ctx;
    if (CUresult r = CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
    if (a.f == nullptr || !e.functions.contains(a.f)) return CUDA_ERROR_INVALID_HANDLE;
    if (a.f->module->ctx != ctx) return CUDA_ERROR_INVALID_CONTEXT;
    auto it = e.kernels.find(a.f->name);
    if (it == e.kernels.end()) return CUDA_ERROR_NOT_FOUND;
    k = it->second;
    if (cooperative && blocks > uint64_t(e.device->sm_count()) * (2048 / threads)) {
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    CUstream_st* s = ResolveStream(e, ctx, a.stream, ptsz);
    if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (s->capture != nullptr) return CaptureKernel(e, s, a);
    not_before = StreamReady(e, s);
  }
  uint64_t block_ns = k.block_ns != 0 ? k.block_ns : uint64_t(e.device->block_ns());
  if (k.cost_param >= 0 && !CostParam(k, a, &block_ns)) return CUDA_ERROR_INVALID_VALUE;
  if (k.body != nullptr && a.params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int64_t end = e.device->ReserveKernel(int64_t(blocks), int64_t(block_ns), not_before);
  {
    std::lock_guard<std::mutex> lock(e.mu);
    CUctx_st* ctx;
    if (CurrentContext(e, &ctx) == CUDA_SUCCESS) {
      if (CUstream_st* s = ResolveStream(e, ctx, a.stream, ptsz); s != nullptr) {
        s->last_end_ns = std::max(s->last_end_ns, end);
      }
    }
  }
  if (k.body != nullptr) {
    k.body(a.params, {a.grid[0], a.grid[1], a.grid[2]}, {a.block[0], a.block[1], a.block[2]},
           k.user);
  }
  return CUDA_SUCCESS;
}

}  // namespace sluice::intercept::emu

SLUICE_EMU_API CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return LoadImage(module, image);
}

SLUICE_EMU_API CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned,
                                           CUjit_option*, void**) {
  return LoadImage(module, image);
}

SLUICE_EMU_API CUresult cuModuleLoadFatBinary(CUmodule* module, const void* image) {
  return LoadImage(module, image);
}

SLUICE_EMU_API CUresult cuModuleLoad(CUmodule* module, const char* path) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::stringstream text;
  text << in.rdbuf();
  return LoadImage(module, text.str().c_str());
}

SLUICE_EMU_API CUresult cuModuleUnload(CUmodule module) {
  EMU_LOCKED(e);
  if (!e.modules.erase(module)) return CUDA_ERROR_INVALID_HANDLE;
  for (CUfunc_st* f : module->functions) {
    e.functions.erase(f);
    delete f;
  }
  delete module;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuModuleGetFunction(CUfunction* func, CUmodule module, const char* name) {
  if (func == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.modules.contains(module)) return CUDA_ERROR_INVALID_HANDLE;
  bool declared = false;
  for (const std::string& entry : module->entries) declared = declared || entry == name;
  if (!declared || !e.kernels.contains(name)) return CUDA_ERROR_NOT_FOUND;
  for (CUfunc_st* f : module->functions) {
    if (f->name == name) {
      *func = f;
      return CUDA_SUCCESS;
    }
  }
  auto* f = new CUfunc_st{module, name};
  module->functions.push_back(f);
  e.functions.insert(f);
  *func = f;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attr, CUfunction f) {
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.functions.contains(f)) return CUDA_ERROR_INVALID_HANDLE;
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 80; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 80; break;
    default: *value = 0;
  }
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute, int) {
  EMU_LOCKED(e);
  return e.functions.contains(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SLUICE_EMU_API CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache) {
  EMU_LOCKED(e);
  return e.functions.contains(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

#define EMU_LAUNCH(name, ptsz, coop)                                                          \
  SLUICE_EMU_API CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz,           \
                               unsigned bx, unsigned by, unsigned bz, unsigned shared,        \
                               CUstream s, void** params, void** extra) {                     \
    return emu::Launch({f, {gx, gy, gz}, {bx, by, bz}, shared, s, params, extra}, ptsz, coop); \
  }
EMU_LAUNCH(cuLaunchKernel, false, false)
EMU_LAUNCH(cuLaunchKernel_ptsz, true, false)

#define EMU_LAUNCH_COOP(name, ptsz)                                                           \
  SLUICE_EMU_API CUresult name(CUfunction f, unsigned gx, unsigned gy, unsigned gz,           \
                               unsigned bx, unsigned by, unsigned bz, unsigned shared,        \
                               CUstream s, void** params) {                                   \
    return emu::Launch({f, {gx, gy, gz}, {bx, by, bz}, shared, s, params, nullptr}, ptsz,     \
                       true);                                                                 \
  }
EMU_LAUNCH_COOP(cuLaunchCooperativeKernel, false)
EMU_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz, true)

namespace {
CUresult LaunchEx(const CUlaunchConfig* c, CUfunction f, void** params, void** extra, bool ptsz) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool coop = false;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) coop = c->attrs[i].value.cooperative;
  }
  return emu::Launch({f, {c->gridDimX, c->gridDimY, c->gridDimZ},
                      {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes, c->hStream,
                      params, extra},
                     ptsz, coop);
}
}  // namespace

SLUICE_EMU_API CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** params,
                                         void** extra) {
  return LaunchEx(c, f, params, extra, false);
}
SLUICE_EMU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f,
                                              void** params, void** extra) {
  return LaunchEx(c, f, params, extra, true);
}
