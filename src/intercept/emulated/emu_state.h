// Process-local state of the emulated driver: the handle objects behind CUcontext, CUstream,
// CUevent, CUmodule, CUfunction and CUmemoryPool, the allocation map, the kernel registry and
// the thread-local context stack. Every api_*.cc includes this first (it includes cuda.h in the
// driver's own "internal" mode, which declares every versioned entry point by its ABI name).
// Thread safety: one process-wide mutex (Emu::mu) guards every table; device waits (queue full,
// synchronisation) happen with it released.
#ifndef SLUICE_INTERCEPT_EMULATED_EMU_STATE_H_
#define SLUICE_INTERCEPT_EMULATED_EMU_STATE_H_

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "intercept/emulated/device_model.h"
#include "intercept/emulated/sluice_emu.h"

#define SLUICE_EMU_API extern "C" __attribute__((visibility("default")))

// In an API function: returns NOT_INITIALIZED before cuInit, else binds `e` to the state and
// holds its mutex until the end of the scope.
#define EMU_LOCKED(e)                                                  \
  ::sluice::intercept::emu::Emu* e##_ptr = ::sluice::intercept::emu::Get(); \
  if (e##_ptr == nullptr) return CUDA_ERROR_NOT_INITIALIZED;           \
  ::sluice::intercept::emu::Emu& e = *e##_ptr;                         \
  std::lock_guard<std::mutex> e##_lock(e.mu)

struct CUstream_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;

struct CUctx_st {
  unsigned flags = 0;
  bool primary = false;
  CUstream_st* null_stream = nullptr;  // owned; the legacy default stream
  std::unordered_map<std::thread::id, CUstream_st*> per_thread;  // owned; CU_STREAM_PER_THREAD
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;  // CU_STREAM_NON_BLOCKING or 0
  int priority = 0;
  bool legacy = false;          // the context's NULL stream
  int64_t last_end_ns = 0;      // completion time (CLOCK_MONOTONIC ns) of its latest work
  CUgraph_st* capture = nullptr;  // graph being captured into, if capturing
};

struct CUevent_st {
  unsigned flags = 0;
  int64_t time_ns = -1;  // -1: never recorded
};

struct CUfunc_st;
struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::vector<std::string> entries;  // kernel names the image declares
  std::vector<CUfunc_st*> functions;  // owned
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;
};

struct CUmemPoolHandle_st {
  bool is_default = false;
  uint64_t release_threshold = 0;
};

namespace sluice::intercept::emu {

struct Kernel {
  uint64_t block_ns = 0;  // 0: device default
  int cost_param = -1;
  std::vector<uint32_t> param_sizes;
  SluiceEmuKernelBody body = nullptr;
  void* user = nullptr;
};

// One kernel launch as every launch entry point (and a graph node) describes it.
struct LaunchArgs {
  CUfunction f = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
};

enum class AllocKind { kDevice, kManaged, kHost, kAsync, kVmm };

struct Allocation {
  size_t size = 0;
  AllocKind kind = AllocKind::kDevice;
  CUctx_st* ctx = nullptr;      // freed with the context (device allocations only)
  CUmemoryPool pool = nullptr;  // kAsync: the pool it came from
  bool charged = false;         // counted against the device capacity
};

// A physical allocation of the virtual-memory API (cuMemCreate): a memfd that mappings share.
struct VmmHandle {
  int fd = -1;
  size_t size = 0;
  int mappings = 0;
  bool released = false;  // freed (fd closed, charge returned) once the last mapping goes
};

struct Emu {
  std::mutex mu;
  DeviceModel* device = nullptr;
  std::unordered_map<std::string, Kernel> kernels;
  std::unordered_set<CUctx_st*> contexts;
  CUctx_st* primary = nullptr;  // created on first retain, lives until exit
  int primary_refs = 0;
  unsigned primary_flags = 0;
  std::unordered_set<CUstream_st*> streams;  // user-created streams
  std::unordered_set<CUevent_st*> events;
  std::unordered_set<CUmod_st*> modules;
  std::unordered_set<CUfunc_st*> functions;
  std::unordered_set<CUmemPoolHandle_st*> pools;
  std::unordered_set<CUgraph_st*> graphs;  // api_graph.cc owns the definitions
  std::unordered_set<CUgraphNode_st*> graph_nodes;
  std::unordered_set<CUgraphExec_st*> graph_execs;
  CUmemPoolHandle_st default_pool{true, 0};
  std::map<uintptr_t, Allocation> allocs;  // keyed by base address
  std::unordered_map<CUmemGenericAllocationHandle, VmmHandle> vmm_handles;  // api_vmm.cc
  CUmemGenericAllocationHandle next_vmm_handle = 1;
  std::map<uintptr_t, size_t> reservations;  // cuMemAddressReserve ranges
  std::map<uintptr_t, CUmemGenericAllocationHandle> vmm_mappings;  // mapped base -> handle
};

// The process's state; nullptr before a successful cuInit.
Emu* Get();
// Opens the device and registers the built-in kernels (idempotent, thread-safe).
CUresult Init();

// The calling thread's current context, or an error (NOT_INITIALIZED / INVALID_CONTEXT).
// Requires e.mu held.
CUresult CurrentContext(Emu& e, CUctx_st** out);
void SetCurrent(CUctx_st* ctx);  // replaces the top of the thread's context stack
void PushCurrent(CUctx_st* ctx);
CUctx_st* PopCurrent();
CUctx_st* PeekCurrent();
CUctx_st* NewContext(Emu& e, unsigned flags, bool primary);  // requires e.mu
void DestroyContext(Emu& e, CUctx_st* ctx);                    // requires e.mu

// Maps a stream handle (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a created stream) to its
// object in the current context; `ptsz` makes 0 mean the per-thread stream. nullptr if invalid.
// Requires e.mu.
CUstream_st* ResolveStream(Emu& e, CUctx_st* ctx, CUstream stream, bool ptsz);
// Earliest time new work on `s` may start (legacy-stream ordering included). Requires e.mu.
int64_t StreamReady(Emu& e, CUstream_st* s);
// Latest completion over every stream of `ctx`. Requires e.mu.
int64_t ContextDone(Emu& e, CUctx_st* ctx);

// The allocation holding [ptr, ptr + bytes), or nullptr. Requires e.mu.
const Allocation* FindAllocation(Emu& e, uintptr_t ptr, size_t bytes);

// Allocates `bytes` of emulated memory (host memory standing for device memory), charging the
// device capacity unless kind is kHost. OUT_OF_MEMORY when the device is full. Requires e.mu.
CUresult Allocate(Emu& e, CUctx_st* ctx, size_t bytes, AllocKind kind, CUmemoryPool pool,
                  uintptr_t* out);
// Frees the allocation based at `ptr` if its kind is one of `kinds`. Requires e.mu.
CUresult Free(Emu& e, uintptr_t ptr, std::initializer_list<AllocKind> kinds);

// Launches (or, on a capturing stream, records) a kernel. Takes e.mu itself; blocks while the
// device launch queue is full. `ptsz`: a NULL stream is the per-thread stream.
CUresult Launch(const LaunchArgs& a, bool ptsz, bool cooperative);
// Records a kernel node into the graph `s` is capturing (api_graph.cc). Requires e.mu.
CUresult CaptureKernel(Emu& e, CUstream_st* s, const LaunchArgs& a);

// Kernel names an image declares: PTX `.entry NAME` and lines `sluice-emu-kernel NAME`.
std::vector<std::string> ParseImageEntries(const char* image, size_t max_bytes);

}  // namespace sluice::intercept::emu

#endif  // SLUICE_INTERCEPT_EMULATED_EMU_STATE_H_
