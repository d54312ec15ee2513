// Exported graph wrappers: every way an executable graph comes to exist or change kernel grids
// updates its recorded launch cost (graph_cost.h). The walk runs after the driver succeeded.
#include "intercept/graph_cost.h"
#include "intercept/hooks.h"

namespace {

inline int64_t Blocks(unsigned int x, unsigned int y, unsigned int z) {
  return static_cast<int64_t>(x) * y * z;
}

}  // namespace

using sluice::intercept::RecordGraphExec;

extern "C" CUresult SluiceHook_cuGraphInstantiate(CUgraphExec* exec, CUgraph graph,
                                                  CUgraphNode* error_node, char* log,
                                                  size_t log_bytes) {
  SLUICE_REAL_OR_RETURN(real, cuGraphInstantiate);
  const CUresult r = real(exec, graph, error_node, log, log_bytes);
  if (r == CUDA_SUCCESS)
    RecordGraphExec(*exec, graph);
  return r;
}

extern "C" CUresult SluiceHook_cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph,
                                                     CUgraphNode* error_node, char* log,
                                                     size_t log_bytes) {
  SLUICE_REAL_OR_RETURN(real, cuGraphInstantiate_v2);
  const CUresult r = real(exec, graph, error_node, log, log_bytes);
  if (r == CUDA_SUCCESS)
    RecordGraphExec(*exec, graph);
  return r;
}

extern "C" CUresult SluiceHook_cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                           unsigned long long flags) {
  SLUICE_REAL_OR_RETURN(real, cuGraphInstantiateWithFlags);
  const CUresult r = real(exec, graph, flags);
  if (r == CUDA_SUCCESS)
    RecordGraphExec(*exec, graph);
  return r;
}

#define SLUICE_INSTANTIATE_WITH_PARAMS(sym)                                     \
  extern "C" CUresult SluiceHook_##sym(CUgraphExec* exec, CUgraph graph,        \
                                       CUDA_GRAPH_INSTANTIATE_PARAMS* params) { \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);        \
    const CUresult r = real(exec, graph, params);                               \
    if (r == CUDA_SUCCESS)                                                      \
      RecordGraphExec(*exec, graph);                                            \
    return r;                                                                   \
  }
SLUICE_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams)
SLUICE_INSTANTIATE_WITH_PARAMS(cuGraphInstantiateWithParams_ptsz)

extern "C" CUresult SluiceHook_cuGraphExecDestroy(CUgraphExec exec) {
  SLUICE_REAL_OR_RETURN(real, cuGraphExecDestroy);
  const CUresult r = real(exec);
  if (r == CUDA_SUCCESS)
    sluice::intercept::ForgetGraphExec(exec);
  return r;
}

// An update takes the new graph's parameters wholesale: re-walk it.
extern "C" CUresult SluiceHook_cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
                                                 CUgraphNode* error_node,
                                                 CUgraphExecUpdateResult* result) {
  SLUICE_REAL_OR_RETURN(real, cuGraphExecUpdate);
  const CUresult r = real(exec, graph, error_node, result);
  if (r == CUDA_SUCCESS)
    RecordGraphExec(exec, graph);
  return r;
}

extern "C" CUresult SluiceHook_cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph,
                                                    CUgraphExecUpdateResultInfo* info) {
  SLUICE_REAL_OR_RETURN(real, cuGraphExecUpdate_v2);
  const CUresult r = real(exec, graph, info);
  if (r == CUDA_SUCCESS)
    RecordGraphExec(exec, graph);
  return r;
}

extern "C" CUresult SluiceHook_cuGraphExecKernelNodeSetParams(
    CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  SLUICE_REAL_OR_RETURN(real, cuGraphExecKernelNodeSetParams);
  const CUresult r = real(exec, node, params);
  if (r == CUDA_SUCCESS && params != nullptr) {
    sluice::intercept::UpdateGraphExecNode(
        exec, node, Blocks(params->gridDimX, params->gridDimY, params->gridDimZ));
  }
  return r;
}

extern "C" CUresult SluiceHook_cuGraphExecKernelNodeSetParams_v2(
    CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2* params) {
  SLUICE_REAL_OR_RETURN(real, cuGraphExecKernelNodeSetParams_v2);
  const CUresult r = real(exec, node, params);
  if (r == CUDA_SUCCESS && params != nullptr) {
    sluice::intercept::UpdateGraphExecNode(
        exec, node, Blocks(params->gridDimX, params->gridDimY, params->gridDimZ));
  }
  return r;
}

extern "C" CUresult SluiceHook_cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                        CUgraphNodeParams* params) {
  SLUICE_REAL_OR_RETURN(real, cuGraphExecNodeSetParams);
  const CUresult r = real(exec, node, params);
  if (r == CUDA_SUCCESS && params != nullptr && params->type == CU_GRAPH_NODE_TYPE_KERNEL) {
    const CUDA_KERNEL_NODE_PARAMS_v3& k = params->kernel;
    sluice::intercept::UpdateGraphExecNode(exec, node, Blocks(k.gridDimX, k.gridDimY, k.gridDimZ));
  }
  return r;
}
