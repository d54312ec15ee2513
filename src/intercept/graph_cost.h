// Launch costs of executable CUDA graphs for libsluice_cuda.so: when a graph is instantiated (or
// an executable graph updated) we walk it once with cuGraphGetNodes / cuGraphNodeGetType /
// cuGraphKernelNodeGetParams (recursing into child graphs) and store the total kernel blocks in
// an O(1) map keyed by the exec handle; cuGraphLaunch then costs one lock-free lookup.
// Not counted: conditional-node bodies and device-side launches (their work depends on runtime
// values). Thread-safe per handle_map.h; concurrent mutation of one exec handle is undefined in
// CUDA and is not made safe here.
#ifndef SLUICE_INTERCEPT_GRAPH_COST_H_
#define SLUICE_INTERCEPT_GRAPH_COST_H_

#include <cuda.h>

#include <cstdint>

namespace sluice::intercept {

// Records `exec`'s cost from the graph it was instantiated from (replacing any previous record).
// Driver failures while walking leave the exec uncharged (cost 0) and are logged in verbose mode.
void RecordGraphExec(CUgraphExec exec, CUgraph graph);
// Cost in blocks of launching `exec`; 0 for an exec we never saw instantiated.
int64_t GraphExecCost(CUgraphExec exec);
// cuGraphExec*SetParams changed one kernel node's grid.
void UpdateGraphExecNode(CUgraphExec exec, CUgraphNode node, int64_t blocks);
// The exec was destroyed.
void ForgetGraphExec(CUgraphExec exec);

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_GRAPH_COST_H_
