// Emulated driver API: CUDA graphs of kernel nodes, built explicitly or by stream capture, and
// launched node after node (insertion order is a valid topological order, since a node's
// dependencies must exist before it). Other node types are not emulated.
#include <cstring>

#include "intercept/emulated/emu_state.h"

namespace emu = sluice::intercept::emu;

// A kernel node owns copies of its parameter values (sizes from the kernel registry).
struct CUgraphNode_st {
  CUgraph_st* graph = nullptr;
  emu::LaunchArgs args;
  std::vector<std::vector<char>> values;  // one per parameter, or one packed buffer (extra)
  std::vector<void*> ptrs;                // args.params or args.extra point here
  size_t buffer_size = 0;

  void Rebind() {  // points args at this node's own storage (after a copy)
    ptrs.clear();
    if (args.params != nullptr) {
      for (auto& v : values) ptrs.push_back(v.data());
      args.params = ptrs.data();
    } else if (args.extra != nullptr) {
      ptrs = {CU_LAUNCH_PARAM_BUFFER_POINTER, values[0].data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
              &buffer_size, CU_LAUNCH_PARAM_END};
      args.extra = ptrs.data();
    }
  }
};

struct CUgraph_st {
  std::vector<CUgraphNode_st*> nodes;  // owned
};

struct CUgraphExec_st {
  std::vector<CUgraphNode_st> nodes;  // snapshot at instantiation
};

namespace {

CUresult MakeNode(emu::Emu& e, CUgraph_st* g, const emu::LaunchArgs& a, CUgraphNode_st** out) {
  if (a.f == nullptr || !e.functions.contains(a.f)) return CUDA_ERROR_INVALID_VALUE;
  auto k = e.kernels.find(a.f->name);
  if (k == e.kernels.end()) return CUDA_ERROR_NOT_FOUND;
  auto* n = new CUgraphNode_st;
  n->graph = g;
  n->args = a;
  n->args.stream = nullptr;
  if (a.params != nullptr) {
    for (size_t i = 0; i < k->second.param_sizes.size(); ++i) {
      const char* p = static_cast<const char*>(a.params[i]);
      n->values.emplace_back(p, p + k->second.param_sizes[i]);
    }
  } else if (a.extra != nullptr) {
    const char* buf = nullptr;
    for (void** x = a.extra; *x != CU_LAUNCH_PARAM_END; x += 2) {
      if (x[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = static_cast<const char*>(x[1]);
      if (x[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) n->buffer_size = *static_cast<size_t*>(x[1]);
    }
    n->values.emplace_back(buf, buf == nullptr ? buf : buf + n->buffer_size);
  }
  n->Rebind();
  g->nodes.push_back(n);
  e.graph_nodes.insert(n);
  *out = n;
  return CUDA_SUCCESS;
}

CUresult BeginCapture(CUstream stream, bool ptsz) {
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  CUstream_st* s = emu::ResolveStream(e, ctx, stream, ptsz);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = new CUgraph_st;
  e.graphs.insert(s->capture);
  return CUDA_SUCCESS;
}

CUresult EndCapture(CUstream stream, CUgraph* graph, bool ptsz) {
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  CUstream_st* s = emu::ResolveStream(e, ctx, stream, ptsz);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = s->capture;
  s->capture = nullptr;
  return CUDA_SUCCESS;
}

CUresult IsCapturing(CUstream stream, CUstreamCaptureStatus* status, bool ptsz) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  CUstream_st* s = emu::ResolveStream(e, ctx, stream, ptsz);
  if (s == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *status = s->capture != nullptr ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult GraphLaunch(CUgraphExec exec, CUstream stream, bool ptsz) {
  std::vector<emu::LaunchArgs> launches;
  {
    EMU_LOCKED(e);
    if (!e.graph_execs.contains(exec)) return CUDA_ERROR_INVALID_HANDLE;
    for (const CUgraphNode_st& n : exec->nodes) launches.push_back(n.args);
  }
  // The exec's storage outlives the launches: destroying an exec while launching it is a bug.
  for (emu::LaunchArgs& a : launches) {
    a.stream = stream;
    if (CUresult r = emu::Launch(a, ptsz, false); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

}  // namespace

namespace sluice::intercept::emu {
CUresult CaptureKernel(Emu& e, CUstream_st* s, const LaunchArgs& a) {
  CUgraphNode_st* node;
  return MakeNode(e, s->capture, a, &node);
}
}  // namespace sluice::intercept::emu

SLUICE_EMU_API CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode) {
  return BeginCapture(s, false);
}
SLUICE_EMU_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode) {
  return BeginCapture(s, true);
}
SLUICE_EMU_API CUresult cuStreamEndCapture(CUstream s, CUgraph* g) { return EndCapture(s, g, false); }
SLUICE_EMU_API CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph* g) {
  return EndCapture(s, g, true);
}
SLUICE_EMU_API CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  return IsCapturing(s, st, false);
}
SLUICE_EMU_API CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus* st) {
  return IsCapturing(s, st, true);
}

SLUICE_EMU_API CUresult cuGraphCreate(CUgraph* graph, unsigned flags) {
  if (graph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  *graph = new CUgraph_st;
  e.graphs.insert(*graph);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphDestroy(CUgraph graph) {
  EMU_LOCKED(e);
  if (!e.graphs.erase(graph)) return CUDA_ERROR_INVALID_VALUE;
  for (CUgraphNode_st* n : graph->nodes) {
    e.graph_nodes.erase(n);
    delete n;
  }
  delete graph;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphAddKernelNode_v2(CUgraphNode* node, CUgraph graph,
                                                const CUgraphNode* deps, size_t ndeps,
                                                const CUDA_KERNEL_NODE_PARAMS* p) {
  if (node == nullptr || p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.graphs.contains(graph)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < ndeps; ++i) {
    if (!e.graph_nodes.contains(deps[i]) || deps[i]->graph != graph) return CUDA_ERROR_INVALID_VALUE;
  }
  if (p->kernelParams != nullptr && p->extra != nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  emu::LaunchArgs a{p->func, {p->gridDimX, p->gridDimY, p->gridDimZ},
                    {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes, nullptr,
                    p->kernelParams, p->extra};
  return MakeNode(e, graph, a, node);
}

SLUICE_EMU_API CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.graphs.contains(graph)) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) {
    *count = graph->nodes.size();
    return CUDA_SUCCESS;
  }
  const size_t n = std::min(*count, graph->nodes.size());
  for (size_t i = 0; i < n; ++i) nodes[i] = graph->nodes[i];
  for (size_t i = n; i < *count; ++i) nodes[i] = nullptr;
  *count = n;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.graph_nodes.contains(node)) return CUDA_ERROR_INVALID_VALUE;
  *type = CU_GRAPH_NODE_TYPE_KERNEL;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node,
                                                      CUDA_KERNEL_NODE_PARAMS* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.graph_nodes.contains(node)) return CUDA_ERROR_INVALID_VALUE;
  const emu::LaunchArgs& a = node->args;
  *p = CUDA_KERNEL_NODE_PARAMS{};
  p->func = a.f;
  p->gridDimX = a.grid[0], p->gridDimY = a.grid[1], p->gridDimZ = a.grid[2];
  p->blockDimX = a.block[0], p->blockDimY = a.block[1], p->blockDimZ = a.block[2];
  p->sharedMemBytes = a.shared_bytes;
  p->kernelParams = a.params;
  p->extra = a.extra;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                    unsigned long long) {
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.graphs.contains(graph)) return CUDA_ERROR_INVALID_VALUE;
  auto* x = new CUgraphExec_st;
  x->nodes.reserve(graph->nodes.size());
  for (const CUgraphNode_st* n : graph->nodes) {
    x->nodes.push_back(*n);
    x->nodes.back().Rebind();
  }
  e.graph_execs.insert(x);
  *exec = x;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
  EMU_LOCKED(e);
  if (!e.graph_execs.erase(exec)) return CUDA_ERROR_INVALID_VALUE;
  delete exec;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuGraphLaunch(CUgraphExec x, CUstream s) { return GraphLaunch(x, s, false); }
SLUICE_EMU_API CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) {
  return GraphLaunch(x, s, true);
}
