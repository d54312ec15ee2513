// Process-local state of the emulated driver: initialisation, built-in kernels, the context
// stack, stream ordering and module-image parsing; plus the sluiceEmu* extension entry points.
#include "intercept/emulated/emu_state.h"

#include <algorithm>
#include <cstring>

namespace sluice::intercept::emu {
namespace {

Emu* g_emu = nullptr;  // leaked on purpose: no destructor ordering at exit
std::once_flag g_once;
CUresult g_init_result = CUDA_ERROR_NOT_INITIALIZED;
thread_local std::vector<CUctx_st*> t_ctx_stack;

void FillU32(void** params, SluiceEmuDim3, SluiceEmuDim3, void*) {
  auto* dst = reinterpret_cast<uint32_t*>(*static_cast<CUdeviceptr*>(params[0]));
  const uint32_t value = *static_cast<uint32_t*>(params[1]);
  const uint64_t count = *static_cast<uint64_t*>(params[2]);
  std::fill(dst, dst + count, value);
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '$' || c == '.';
}

}  // namespace

Emu* Get() { return g_emu; }

CUresult Init() {
  std::call_once(g_once, [] {
    DeviceModel* device = DeviceModel::Open(DeviceConfig::FromEnv());
    if (device == nullptr) {
      g_init_result = CUDA_ERROR_NO_DEVICE;
      return;
    }
    auto* e = new Emu;
    e->device = device;
    e->kernels["spin"] = Kernel{0, 0, {8}, nullptr, nullptr};
    e->kernels["noop"] = Kernel{0, -1, {}, nullptr, nullptr};
    e->kernels["fill_u32"] = Kernel{0, -1, {8, 4, 8}, &FillU32, nullptr};
    g_emu = e;
    g_init_result = CUDA_SUCCESS;
  });
  return g_init_result;
}

CUresult CurrentContext(Emu& e, CUctx_st** out) {
  CUctx_st* ctx = PeekCurrent();
  if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (!e.contexts.contains(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = ctx;
  return CUDA_SUCCESS;
}

CUctx_st* PeekCurrent() { return t_ctx_stack.empty() ? nullptr : t_ctx_stack.back(); }

void SetCurrent(CUctx_st* ctx) {
  if (ctx == nullptr) {
    if (!t_ctx_stack.empty()) t_ctx_stack.pop_back();
  } else if (t_ctx_stack.empty()) {
    t_ctx_stack.push_back(ctx);
  } else {
    t_ctx_stack.back() = ctx;
  }
}

void PushCurrent(CUctx_st* ctx) { t_ctx_stack.push_back(ctx); }

CUctx_st* PopCurrent() {
  if (t_ctx_stack.empty()) return nullptr;
  CUctx_st* ctx = t_ctx_stack.back();
  t_ctx_stack.pop_back();
  return ctx;
}

CUctx_st* NewContext(Emu& e, unsigned flags, bool primary) {
  auto* ctx = new CUctx_st;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->null_stream = new CUstream_st;
  ctx->null_stream->ctx = ctx;
  ctx->null_stream->legacy = true;
  e.contexts.insert(ctx);
  return ctx;
}

void DestroyContext(Emu& e, CUctx_st* ctx) {
  for (auto it = e.allocs.begin(); it != e.allocs.end();) {
    if (it->second.ctx != ctx) {
      ++it;
      continue;
    }
    if (it->second.charged) e.device->ReleaseMemory(static_cast<int64_t>(it->second.size));
    if (it->second.kind != AllocKind::kVmm) std::free(reinterpret_cast<void*>(it->first));
    it = e.allocs.erase(it);
  }
  for (auto it = e.streams.begin(); it != e.streams.end();) {
    if ((*it)->ctx == ctx) {
      delete *it;
      it = e.streams.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [tid, s] : ctx->per_thread) delete s;
  delete ctx->null_stream;
  e.contexts.erase(ctx);
  delete ctx;
}

CUstream_st* ResolveStream(Emu& e, CUctx_st* ctx, CUstream stream, bool ptsz) {
  if (stream == CU_STREAM_LEGACY || (stream == nullptr && !ptsz)) return ctx->null_stream;
  if (stream == CU_STREAM_PER_THREAD || stream == nullptr) {
    CUstream_st*& s = ctx->per_thread[std::this_thread::get_id()];
    if (s == nullptr) {
      s = new CUstream_st;
      s->ctx = ctx;
    }
    return s;
  }
  if (!e.streams.contains(stream) || stream->ctx != ctx) return nullptr;
  return stream;
}

int64_t StreamReady(Emu& e, CUstream_st* s) {
  CUctx_st* ctx = s->ctx;
  if (s->legacy) return ContextDone(e, ctx);  // the NULL stream waits for every blocking stream
  if (s->flags & CU_STREAM_NON_BLOCKING) return s->last_end_ns;
  return std::max(s->last_end_ns, ctx->null_stream->last_end_ns);
}

int64_t ContextDone(Emu& e, CUctx_st* ctx) {
  int64_t t = ctx->null_stream->last_end_ns;
  for (const auto& [tid, s] : ctx->per_thread) t = std::max(t, s->last_end_ns);
  for (CUstream_st* s : e.streams) {
    if (s->ctx == ctx) t = std::max(t, s->last_end_ns);
  }
  return t;
}

const Allocation* FindAllocation(Emu& e, uintptr_t ptr, size_t bytes) {
  auto it = e.allocs.upper_bound(ptr);
  if (it == e.allocs.begin()) return nullptr;
  --it;
  if (ptr + bytes > it->first + it->second.size || ptr + bytes < ptr) return nullptr;
  return &it->second;
}

std::vector<std::string> ParseImageEntries(const char* image, size_t max_bytes) {
  std::vector<std::string> out;
  const size_t n = strnlen(image, max_bytes);
  const std::string text(image, n);
  for (const char* key : {".entry", "sluice-emu-kernel"}) {
    for (size_t pos = text.find(key); pos != std::string::npos; pos = text.find(key, pos + 1)) {
      size_t i = pos + std::strlen(key);
      if (i >= n || (text[i] != ' ' && text[i] != '\t')) continue;
      while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
      size_t j = i;
      while (j < n && IsNameChar(text[j])) ++j;
      if (j > i) out.push_back(text.substr(i, j - i));
    }
  }
  return out;
}

}  // namespace sluice::intercept::emu

using sluice::intercept::emu::Emu;

SLUICE_EMU_API int sluiceEmuRegisterKernel(const char* name, uint64_t block_ns, int cost_param,
                                           const uint32_t* param_sizes, int param_count,
                                           SluiceEmuKernelBody body, void* user) {
  if (name == nullptr || *name == '\0' || param_count < 0 || cost_param >= param_count ||
      cost_param < -1 || (param_count > 0 && param_sizes == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (cost_param >= 0 && param_sizes[cost_param] != 8) return CUDA_ERROR_INVALID_VALUE;
  if (sluice::intercept::emu::Init() != CUDA_SUCCESS) return CUDA_ERROR_NO_DEVICE;
  Emu& e = *sluice::intercept::emu::Get();
  std::lock_guard<std::mutex> lock(e.mu);
  e.kernels[name] = sluice::intercept::emu::Kernel{
      block_ns, cost_param, std::vector<uint32_t>(param_sizes, param_sizes + param_count), body,
      user};
  return CUDA_SUCCESS;
}

SLUICE_EMU_API int sluiceEmuGetStats(SluiceEmuStats* out) {
  Emu* e = sluice::intercept::emu::Get();
  if (e == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(out->uuid, sizeof(out->uuid), "%s", e->device->uuid());
  out->sm_count = e->device->sm_count();
  out->memory_bytes = e->device->memory_bytes();
  out->memory_used_bytes = e->device->MemoryUsed();
  out->kernels_run = e->device->kernels_run();
  out->blocks_run = e->device->blocks_run();
  return CUDA_SUCCESS;
}
