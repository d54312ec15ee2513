// Finding the real driver. We may ourselves be "libcuda.so.1" (our SONAME, so that the CUDA
// runtime's dlopen("libcuda.so.1") + dlsym finds our cuGetProcAddress), in which case
// dlopen("libcuda.so.1") hands back this library; then the loader's own search path is walked
// by full path, skipping any file that turns out to be us.
#include "intercept/real_driver.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "intercept/hook_table.h"
#include "intercept/hooks.h"
#include "intercept/log.h"
#include "intercept/passthrough.h"

namespace sluice::intercept {

void* g_real[kHookCount];
thread_local int t_hook_depth __attribute__((tls_model("initial-exec"))) = 0;

namespace {

constinit Config g_config;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
std::atomic<bool> g_loaded{false};
void* g_handle = nullptr;
char g_path[Config::kPathBytes];
SluicePfn_cuGetProcAddress_v2 g_gpa_v2 = nullptr;
SluicePfn_cuGetProcAddress g_gpa_v1 = nullptr;

const char* GetEnv(const char* name) {
  return std::getenv(name);
}

// Opens `path` and keeps it unless it is this library. Sets *was_self when it was.
void* TryOpen(const char* path, bool* was_self) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    return nullptr;
  if (IsSelf(h)) {
    *was_self = true;
    dlclose(h);
    return nullptr;
  }
  std::snprintf(g_path, sizeof(g_path), "%s", path);
  return h;
}

// Walks the directories the dynamic loader would search for the main program (LD_LIBRARY_PATH,
// RUNPATH, system directories), then a few places drivers are installed.
void* SearchByPath(bool* was_self) {
  void* main_handle = dlopen(nullptr, RTLD_NOW);
  Dl_serinfo size_info;
  if (main_handle != nullptr && dlinfo(main_handle, RTLD_DI_SERINFOSIZE, &size_info) == 0) {
    auto* info = static_cast<Dl_serinfo*>(std::malloc(size_info.dls_size));
    if (info != nullptr) {
      info->dls_size = size_info.dls_size;
      info->dls_cnt = size_info.dls_cnt;
      if (dlinfo(main_handle, RTLD_DI_SERINFOSIZE, info) == 0 &&
          dlinfo(main_handle, RTLD_DI_SERINFO, info) == 0) {
        for (unsigned i = 0; i < info->dls_cnt; ++i) {
          char path[Config::kPathBytes];
          std::snprintf(path, sizeof(path), "%s/libcuda.so.1", info->dls_serpath[i].dls_name);
          if (void* h = TryOpen(path, was_self)) {
            std::free(info);
            return h;
          }
        }
      }
      std::free(info);
    }
  }
  static const char* const kDirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                      "/usr/lib/aarch64-linux-gnu", "/usr/local/nvidia/lib64",
                                      "/usr/lib/wsl/lib"};
  for (const char* dir : kDirs) {
    char path[Config::kPathBytes];
    std::snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
    if (void* h = TryOpen(path, was_self))
      return h;
  }
  return nullptr;
}

void* OpenRealDriver() {
  bool was_self = false;
  if (g_config.real_libcuda[0] != '\0') {
    if (void* h = TryOpen(g_config.real_libcuda, &was_self))
      return h;
    LogAlways("SLUICE_REAL_LIBCUDA=%s %s; searching for libcuda.so.1", g_config.real_libcuda,
              was_self ? "is this library" : "cannot be opened");
  }
  if (void* h = TryOpen("libcuda.so.1", &was_self))
    return h;
  if (void* h = SearchByPath(&was_self))
    return h;
  LogAlways("no real CUDA driver found (libcuda.so.1%s); CUDA calls will fail",
            was_self ? " resolves to this library; set SLUICE_REAL_LIBCUDA" : " not found");
  return nullptr;
}

void Load() {
  HookScope scope;  // the driver's constructors may call exported cu* symbols: pass through
  const int bad = ParseConfig(&GetEnv, &g_config);
  SetVerbose(g_config.verbose);
  if (bad > 0)
    LogAlways("%d invalid SLUICE_* setting(s) ignored", bad);
  g_handle = OpenRealDriver();
  if (g_handle != nullptr) {
    size_t count = 0;
    const HookEntry* table = HookTable(&count);
    for (size_t i = 0; i < count; ++i) {
      if (g_real[table[i].id] == nullptr)
        g_real[table[i].id] = dlsym(g_handle, table[i].symbol);
    }
    g_gpa_v2 = reinterpret_cast<SluicePfn_cuGetProcAddress_v2>(g_real[kHook_cuGetProcAddress_v2]);
    g_gpa_v1 = reinterpret_cast<SluicePfn_cuGetProcAddress>(g_real[kHook_cuGetProcAddress]);
    ResolvePassthrough(g_handle);
    LogVerbose("real driver: %s", g_path);
  }
  g_loaded.store(true, std::memory_order_release);
}

}  // namespace

void EnsureLoaded() {
  if (g_loaded.load(std::memory_order_acquire)) [[likely]]
    return;
  pthread_once(&g_once, &Load);
}

CUresult MissingReal(const char* symbol) {
  if (g_handle == nullptr)
    return CUDA_ERROR_NOT_INITIALIZED;
  LogVerbose("real driver lacks %s", symbol);
  return CUDA_ERROR_NOT_FOUND;
}

const Config& LoadedConfig() {
  EnsureLoaded();
  return g_config;
}

void* RealDriverHandle() {
  EnsureLoaded();
  return g_handle;
}

const char* RealDriverPath() {
  EnsureLoaded();
  return g_handle != nullptr ? g_path : "";
}

bool IsSelf(void* handle) {
  // We always export cuGetProcAddress; if the handle's one lives in our own image, it is us.
  void* theirs = dlsym(handle, "cuGetProcAddress");
  if (theirs == nullptr)
    return false;
  Dl_info their_info;
  Dl_info our_info;
  if (dladdr(theirs, &their_info) == 0)
    return false;
  if (dladdr(reinterpret_cast<void*>(&IsSelf), &our_info) == 0)
    return false;
  return their_info.dli_fbase == our_info.dli_fbase;
}

void* RealSymbol(const char* name) {
  void* h = RealDriverHandle();
  return h != nullptr ? dlsym(h, name) : nullptr;
}

bool RealHasGetProcAddress() {
  EnsureLoaded();
  return g_gpa_v2 != nullptr || g_gpa_v1 != nullptr;
}

CUresult RealGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags,
                            CUdriverProcAddressQueryResult* status) {
  EnsureLoaded();
  CUdriverProcAddressQueryResult s = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = CUDA_ERROR_NOT_FOUND;
  if (g_gpa_v2 != nullptr) {
    r = g_gpa_v2(symbol, pfn, version, flags, &s);
  } else if (g_gpa_v1 != nullptr) {
    r = g_gpa_v1(symbol, pfn, version, flags);
    s = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  if (status != nullptr)
    *status = s;
  return r;
}

}  // namespace sluice::intercept
