// Emulated driver API: cuGetProcAddress (both ABIs) over one table of every entry point keyed by
// base name, ABI version and per-thread-stream variant (symbols.inc), and the error strings.
#include <cstring>

#include "intercept/emulated/emu_state.h"

namespace {

struct Symbol {
  const char* base;
  int version;
  int per_thread;  // 1: the _ptds/_ptsz variant
  void* fn;
};

const Symbol kSymbols[] = {
#define SLUICE_EMU_SYMBOL(base, version, per_thread, fn) \
  {base, version, per_thread, (void*)(fn)},
#include "intercept/emulated/symbols.inc"
#undef SLUICE_EMU_SYMBOL
};

// The newest entry of `base` with the given variant whose version <= `version`.
const Symbol* Best(const char* base, int version, int per_thread, bool* base_seen) {
  const Symbol* best = nullptr;
  for (const Symbol& s : kSymbols) {
    if (std::strcmp(s.base, base) != 0 || s.per_thread != per_thread) continue;
    *base_seen = true;
    if (s.version <= version && (best == nullptr || s.version > best->version)) best = &s;
  }
  return best;
}

CUresult Lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pfn = nullptr;
  bool seen = false;
  const Symbol* best = nullptr;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) best = Best(symbol, version, 1, &seen);
  if (!seen) best = Best(symbol, version, 0, &seen);  // no per-thread variant of this symbol
  if (best != nullptr && best->fn != nullptr) {
    *pfn = best->fn;
    st = CU_GET_PROC_ADDRESS_SUCCESS;
  } else if (seen && best == nullptr) {
    st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  }
  if (status != nullptr) *status = st;
  return st == CU_GET_PROC_ADDRESS_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

const ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation is in an illegal state"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* FindError(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

SLUICE_EMU_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* status) {
  return Lookup(symbol, pfn, version, flags, status);
}

SLUICE_EMU_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int version,
                                         cuuint64_t flags) {
  return Lookup(symbol, pfn, version, flags, nullptr);
}

SLUICE_EMU_API CUresult cuGetErrorString(CUresult code, const char** text) {
  if (text == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = FindError(code);
  *text = e == nullptr ? nullptr : e->text;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGetErrorName(CUresult code, const char** name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = FindError(code);
  *name = e == nullptr ? nullptr : e->name;
  return e == nullptr ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
