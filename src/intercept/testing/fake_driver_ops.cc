// Fake driver, part 2: memory, launches, graphs and stream capture. Device memory is a byte
// budget with made-up addresses; graphs are node lists; streams carry a capture flag.
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "intercept/testing/fake_driver_internal.h"

namespace sluice::intercept::fake {
namespace {

struct Node {
  CUgraphNodeType type;
  unsigned grid[3];
  CUgraph child;
};
struct Graph {
  std::vector<Node*> nodes;
};
struct Exec {
  Graph* graph;
};
struct Stream {
  std::atomic<int> capturing{0};
};

std::mutex g_mu;
std::unordered_map<uint64_t, int64_t>* g_allocs = new std::unordered_map<uint64_t, int64_t>();
enum class Space { kDevice, kDevice32, kHandle };
uint64_t g_next_address = uint64_t{1} << 32;    // guarded by g_mu
uint64_t g_next_address32 = uint64_t{1} << 28;  // for the v1 (32-bit) entry points; g_mu
uint64_t g_next_handle = 1;                     // guarded by g_mu

Graph* G(CUgraph g) {
  return reinterpret_cast<Graph*>(g);
}
Node* N(CUgraphNode n) {
  return reinterpret_cast<Node*>(n);
}
Stream* S(CUstream s) {
  return reinterpret_cast<Stream*>(s);
}

CUresult Alloc(const char* entry, unsigned long long* out, size_t bytes,
               Space space = Space::kDevice) {
  if (out == nullptr || bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  FakeState& st = State();
  std::lock_guard<std::mutex> lock(g_mu);
  if (st.live_bytes.load() + static_cast<int64_t>(bytes) > st.total_bytes.load()) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  uint64_t key;
  const uint64_t span = (bytes + 0xfffff) & ~uint64_t{0xfffff};
  if (space == Space::kHandle) {
    key = g_next_handle++;
  } else if (space == Space::kDevice32) {
    key = g_next_address32;
    g_next_address32 += span;
  } else {
    key = g_next_address;
    g_next_address += span;
  }
  (*g_allocs)[key] = static_cast<int64_t>(bytes);
  *out = key;
  st.live_bytes.fetch_add(static_cast<int64_t>(bytes));
  st.allocations.fetch_add(1);
  st.last_entry.store(entry);
  return CUDA_SUCCESS;
}

CUresult Free(const char* entry, uint64_t key) {
  FakeState& st = State();
  if (st.fail_next_free.exchange(0) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_allocs->find(key);
  if (it == g_allocs->end())
    return CUDA_ERROR_INVALID_VALUE;
  st.live_bytes.fetch_sub(it->second);
  g_allocs->erase(it);
  st.frees.fetch_add(1);
  st.last_entry.store(entry);
  return CUDA_SUCCESS;
}

// A launch of the function handle 0xbad fails (tests use it to check token refunds).
CUresult Launch(const char* entry, CUfunction f, unsigned x, unsigned y, unsigned z) {
  if (x == 0 || y == 0 || z == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (f == reinterpret_cast<CUfunction>(0xbad))
    return CUDA_ERROR_INVALID_HANDLE;
  FakeState& st = State();
  st.launches.fetch_add(1);
  st.launched_blocks.fetch_add(static_cast<int64_t>(x) * y * z);
  st.last_entry.store(entry);
  return CUDA_SUCCESS;
}

CUresult Instantiate(CUgraphExec* exec, CUgraph graph) {
  if (exec == nullptr || graph == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *exec = reinterpret_cast<CUgraphExec>(new Exec{G(graph)});
  return CUDA_SUCCESS;
}

CUresult BeginCapture(CUstream s) {
  if (s == nullptr)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (S(s)->capturing.exchange(1) != 0)
    return CUDA_ERROR_ILLEGAL_STATE;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace sluice::intercept::fake

namespace fk = sluice::intercept::fake;

extern "C" __attribute__((visibility("default"))) CUstream fake_stream_new() {
  return reinterpret_cast<CUstream>(new fk::Stream());
}
extern "C" __attribute__((visibility("default"))) CUgraph fake_graph_new() {
  return reinterpret_cast<CUgraph>(new fk::Graph());
}
extern "C" __attribute__((visibility("default"))) CUgraphNode fake_graph_add_kernel(CUgraph g,
                                                                                    unsigned x,
                                                                                    unsigned y,
                                                                                    unsigned z) {
  auto* n = new fk::Node{CU_GRAPH_NODE_TYPE_KERNEL, {x, y, z}, nullptr};
  fk::G(g)->nodes.push_back(n);
  return reinterpret_cast<CUgraphNode>(n);
}
extern "C" __attribute__((visibility("default"))) CUgraphNode fake_graph_add_child(CUgraph g,
                                                                                   CUgraph child) {
  auto* n = new fk::Node{CU_GRAPH_NODE_TYPE_GRAPH, {0, 0, 0}, child};
  fk::G(g)->nodes.push_back(n);
  return reinterpret_cast<CUgraphNode>(n);
}
extern "C" __attribute__((visibility("default"))) CUgraphNode fake_graph_add_empty(CUgraph g) {
  auto* n = new fk::Node{CU_GRAPH_NODE_TYPE_MEMSET, {0, 0, 0}, nullptr};
  fk::G(g)->nodes.push_back(n);
  return reinterpret_cast<CUgraphNode>(n);
}

// ---- memory ----
FAKE_API(cuMemAlloc, (unsigned int* dptr, unsigned int bytes)) {
  unsigned long long p = 0;
  const CUresult r = fk::Alloc("cuMemAlloc", &p, bytes, fk::Space::kDevice32);
  if (r == CUDA_SUCCESS)
    *dptr = static_cast<unsigned int>(p);
  return r;
}
FAKE_API(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytes)) {
  return fk::Alloc("cuMemAlloc_v2", dptr, bytes);
}
FAKE_API(cuMemAlloc_v3, (CUdeviceptr * dptr, size_t bytes)) {
  return fk::Alloc("cuMemAlloc_v3", dptr, bytes);
}
FAKE_API(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytes, unsigned int)) {
  return fk::Alloc("cuMemAllocManaged", dptr, bytes);
}
FAKE_API(cuMemAllocPitch_v2,
         (CUdeviceptr * dptr, size_t* pitch, size_t width, size_t height, unsigned int)) {
  if (pitch == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *pitch = (width + 511) & ~size_t{511};
  return fk::Alloc("cuMemAllocPitch_v2", dptr, *pitch * height);
}
FAKE_API(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytes, CUstream)) {
  return fk::Alloc("cuMemAllocAsync", dptr, bytes);
}
FAKE_API(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytes, CUstream)) {
  return fk::Alloc("cuMemAllocAsync_ptsz", dptr, bytes);
}
FAKE_API(cuMemAllocFromPoolAsync, (CUdeviceptr * dptr, size_t bytes, CUmemoryPool, CUstream)) {
  return fk::Alloc("cuMemAllocFromPoolAsync", dptr, bytes);
}
FAKE_API(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr * dptr, size_t bytes, CUmemoryPool, CUstream)) {
  return fk::Alloc("cuMemAllocFromPoolAsync_ptsz", dptr, bytes);
}
FAKE_API(cuMemCreate, (CUmemGenericAllocationHandle * h, size_t bytes, const CUmemAllocationProp*,
                       unsigned long long)) {
  return fk::Alloc("cuMemCreate", h, bytes, fk::Space::kHandle);
}
FAKE_API(cuMemFree_v2, (CUdeviceptr p)) {
  return fk::Free("cuMemFree_v2", p);
}
FAKE_API(cuMemFreeAsync, (CUdeviceptr p, CUstream)) {
  return fk::Free("cuMemFreeAsync", p);
}
FAKE_API(cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream)) {
  return fk::Free("cuMemFreeAsync_ptsz", p);
}
FAKE_API(cuMemRelease, (CUmemGenericAllocationHandle h)) {
  return fk::Free("cuMemRelease", h);
}
FAKE_API(cuMemGetInfo_v2, (size_t * free_bytes, size_t* total_bytes)) {
  if (free_bytes == nullptr || total_bytes == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  const fk::FakeState& st = fk::State();
  *total_bytes = static_cast<size_t>(st.total_bytes.load());
  *free_bytes = static_cast<size_t>(st.total_bytes.load() - st.live_bytes.load());
  return CUDA_SUCCESS;
}

// ---- launches ----
#define FAKE_LAUNCH(sym)                                                                        \
  FAKE_API_IDS(Fake_##sym, #sym,                                                                \
               (CUfunction f, unsigned x, unsigned y, unsigned z, unsigned, unsigned, unsigned, \
                unsigned, CUstream, void**, void**)) {                                          \
    return fk::Launch(#sym, f, x, y, z);                                                        \
  }
FAKE_LAUNCH(cuLaunchKernel)
FAKE_LAUNCH(cuLaunchKernel_ptsz)
#define FAKE_LAUNCH_COOP(sym)                                                                   \
  FAKE_API_IDS(Fake_##sym, #sym,                                                                \
               (CUfunction f, unsigned x, unsigned y, unsigned z, unsigned, unsigned, unsigned, \
                unsigned, CUstream, void**)) {                                                  \
    return fk::Launch(#sym, f, x, y, z);                                                        \
  }
FAKE_LAUNCH_COOP(cuLaunchCooperativeKernel)
FAKE_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)
#define FAKE_LAUNCH_EX(sym)                                                                 \
  FAKE_API_IDS(Fake_##sym, #sym, (const CUlaunchConfig* c, CUfunction f, void**, void**)) { \
    if (c == nullptr)                                                                       \
      return CUDA_ERROR_INVALID_VALUE;                                                      \
    return fk::Launch(#sym, f, c->gridDimX, c->gridDimY, c->gridDimZ);                      \
  }
FAKE_LAUNCH_EX(cuLaunchKernelEx)
FAKE_LAUNCH_EX(cuLaunchKernelEx_ptsz)
#define FAKE_GRAPH_LAUNCH(sym)                                   \
  FAKE_API_IDS(Fake_##sym, #sym, (CUgraphExec exec, CUstream)) { \
    if (exec == nullptr)                                         \
      return CUDA_ERROR_INVALID_VALUE;                           \
    fk::State().launches.fetch_add(1);                           \
    fk::State().graph_launches.fetch_add(1);                     \
    fk::State().last_entry.store(#sym);                          \
    return CUDA_SUCCESS;                                         \
  }
FAKE_GRAPH_LAUNCH(cuGraphLaunch)
FAKE_GRAPH_LAUNCH(cuGraphLaunch_ptsz)

// ---- graphs ----
FAKE_API(cuGraphGetNodes, (CUgraph g, CUgraphNode* nodes, size_t* count)) {
  if (g == nullptr || count == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  const auto& all = fk::G(g)->nodes;
  if (nodes != nullptr) {
    for (size_t i = 0; i < *count && i < all.size(); ++i) {
      nodes[i] = reinterpret_cast<CUgraphNode>(all[i]);
    }
  }
  *count = all.size();
  return CUDA_SUCCESS;
}
FAKE_API(cuGraphNodeGetType, (CUgraphNode n, CUgraphNodeType* type)) {
  if (n == nullptr || type == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *type = fk::N(n)->type;
  return CUDA_SUCCESS;
}
#define FAKE_KERNEL_PARAMS(sym, params_type)                                           \
  FAKE_API_IDS(Fake_##sym, #sym, (CUgraphNode n, params_type * p)) {                   \
    if (n == nullptr || p == nullptr || fk::N(n)->type != CU_GRAPH_NODE_TYPE_KERNEL) { \
      return CUDA_ERROR_INVALID_VALUE;                                                 \
    }                                                                                  \
    p->gridDimX = fk::N(n)->grid[0];                                                   \
    p->gridDimY = fk::N(n)->grid[1];                                                   \
    p->gridDimZ = fk::N(n)->grid[2];                                                   \
    return CUDA_SUCCESS;                                                               \
  }
FAKE_KERNEL_PARAMS(cuGraphKernelNodeGetParams, CUDA_KERNEL_NODE_PARAMS_v1)
FAKE_KERNEL_PARAMS(cuGraphKernelNodeGetParams_v2, CUDA_KERNEL_NODE_PARAMS_v2)
FAKE_API(cuGraphChildGraphNodeGetGraph, (CUgraphNode n, CUgraph* child)) {
  if (n == nullptr || child == nullptr || fk::N(n)->type != CU_GRAPH_NODE_TYPE_GRAPH) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *child = fk::N(n)->child;
  return CUDA_SUCCESS;
}
FAKE_API(cuGraphInstantiate, (CUgraphExec * e, CUgraph g, CUgraphNode*, char*, size_t)) {
  return fk::Instantiate(e, g);
}
FAKE_API(cuGraphInstantiate_v2, (CUgraphExec * e, CUgraph g, CUgraphNode*, char*, size_t)) {
  return fk::Instantiate(e, g);
}
FAKE_API(cuGraphInstantiateWithFlags, (CUgraphExec * e, CUgraph g, unsigned long long)) {
  return fk::Instantiate(e, g);
}
FAKE_API(cuGraphInstantiateWithParams,
         (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS*)) {
  return fk::Instantiate(e, g);
}
FAKE_API(cuGraphInstantiateWithParams_ptsz,
         (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS*)) {
  return fk::Instantiate(e, g);
}
FAKE_API(cuGraphExecDestroy, (CUgraphExec e)) {
  if (e == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  delete reinterpret_cast<fk::Exec*>(e);
  return CUDA_SUCCESS;
}
FAKE_API(cuGraphExecUpdate, (CUgraphExec e, CUgraph g, CUgraphNode*, CUgraphExecUpdateResult*)) {
  return e != nullptr && g != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FAKE_API(cuGraphExecUpdate_v2, (CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo*)) {
  return e != nullptr && g != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FAKE_API(cuGraphExecKernelNodeSetParams,
         (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1*)) {
  return e != nullptr && n != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FAKE_API(cuGraphExecKernelNodeSetParams_v2,
         (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v2*)) {
  return e != nullptr && n != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FAKE_API(cuGraphExecNodeSetParams, (CUgraphExec e, CUgraphNode n, CUgraphNodeParams*)) {
  return e != nullptr && n != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- stream capture ----
FAKE_API(cuStreamBeginCapture, (CUstream s)) {
  return fk::BeginCapture(s);
}
FAKE_API(cuStreamBeginCapture_ptsz, (CUstream s)) {
  return fk::BeginCapture(s);
}
FAKE_API(cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode)) {
  return fk::BeginCapture(s);
}
FAKE_API(cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode)) {
  return fk::BeginCapture(s);
}
FAKE_API(cuStreamBeginCaptureToGraph, (CUstream s, CUgraph, const CUgraphNode*,
                                       const CUgraphEdgeData*, size_t, CUstreamCaptureMode)) {
  return fk::BeginCapture(s);
}
FAKE_API(cuStreamBeginCaptureToGraph_ptsz, (CUstream s, CUgraph, const CUgraphNode*,
                                            const CUgraphEdgeData*, size_t, CUstreamCaptureMode)) {
  return fk::BeginCapture(s);
}
#define FAKE_END_CAPTURE(sym)                                 \
  FAKE_API_IDS(Fake_##sym, #sym, (CUstream s, CUgraph * g)) { \
    if (s == nullptr || g == nullptr)                         \
      return CUDA_ERROR_INVALID_VALUE;                        \
    if (fk::S(s)->capturing.exchange(0) == 0)                 \
      return CUDA_ERROR_ILLEGAL_STATE;                        \
    *g = reinterpret_cast<CUgraph>(new fk::Graph());          \
    return CUDA_SUCCESS;                                      \
  }
FAKE_END_CAPTURE(cuStreamEndCapture)
FAKE_END_CAPTURE(cuStreamEndCapture_ptsz)
#define FAKE_IS_CAPTURING(sym)                                                                  \
  FAKE_API_IDS(Fake_##sym, #sym, (CUstream s, CUstreamCaptureStatus * status)) {                \
    if (status == nullptr)                                                                      \
      return CUDA_ERROR_INVALID_VALUE;                                                          \
    *status = s != nullptr && fk::S(s)->capturing.load() != 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE \
                                                              : CU_STREAM_CAPTURE_STATUS_NONE;  \
    return CUDA_SUCCESS;                                                                        \
  }
FAKE_IS_CAPTURING(cuStreamIsCapturing)
FAKE_IS_CAPTURING(cuStreamIsCapturing_ptsz)
