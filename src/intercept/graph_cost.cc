// Graph walking uses the real driver's entry points directly (never our exports), so it runs
// safely inside a hook. Records are malloc'd and freed when replaced or destroyed.
#include "intercept/graph_cost.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "intercept/handle_map.h"
#include "intercept/log.h"
#include "intercept/real_driver.h"

namespace sluice::intercept {
namespace {

struct NodeCost {
  CUgraphNode node;
  int64_t blocks;
};

struct ExecRecord {
  std::atomic<int64_t> total;
  size_t count;
  size_t capacity;
  NodeCost* nodes;
};

struct GraphApi {
  CUresult (*get_nodes)(CUgraph, CUgraphNode*, size_t*);
  CUresult (*get_type)(CUgraphNode, CUgraphNodeType*);
  CUresult (*kernel_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2*);  // v2, or v1 (a prefix)
  CUresult (*child_graph)(CUgraphNode, CUgraph*);
};

constexpr int kMaxDepth = 8;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
alignas(HandleMap) unsigned char g_map_storage[sizeof(HandleMap)];
HandleMap* g_map;
GraphApi g_api;

template <typename F>
void Resolve(F* fn, const char* name, const char* fallback = nullptr) {
  void* p = RealSymbol(name);
  if (p == nullptr && fallback != nullptr)
    p = RealSymbol(fallback);
  *fn = reinterpret_cast<F>(p);
}

void Init() {
  g_map = new (g_map_storage) HandleMap(256);
  Resolve(&g_api.get_nodes, "cuGraphGetNodes");
  Resolve(&g_api.get_type, "cuGraphNodeGetType");
  Resolve(&g_api.kernel_params, "cuGraphKernelNodeGetParams_v2", "cuGraphKernelNodeGetParams");
  Resolve(&g_api.child_graph, "cuGraphChildGraphNodeGetGraph");
}

HandleMap& Map() {
  pthread_once(&g_once, &Init);
  return *g_map;
}

bool Append(ExecRecord* rec, CUgraphNode node, int64_t blocks) {
  if (rec->count == rec->capacity) {
    const size_t capacity = rec->capacity == 0 ? 16 : rec->capacity * 2;
    void* p = std::realloc(rec->nodes, capacity * sizeof(NodeCost));
    if (p == nullptr)
      return false;
    rec->nodes = static_cast<NodeCost*>(p);
    rec->capacity = capacity;
  }
  rec->nodes[rec->count++] = {node, blocks};
  rec->total.fetch_add(blocks, std::memory_order_relaxed);
  return true;
}

bool Walk(CUgraph graph, ExecRecord* rec, int depth) {
  if (depth > kMaxDepth || g_api.get_nodes == nullptr || g_api.get_type == nullptr)
    return false;
  size_t n = 0;
  if (g_api.get_nodes(graph, nullptr, &n) != CUDA_SUCCESS)
    return false;
  if (n == 0)
    return true;
  auto* nodes = static_cast<CUgraphNode*>(std::malloc(n * sizeof(CUgraphNode)));
  if (nodes == nullptr)
    return false;
  bool ok = g_api.get_nodes(graph, nodes, &n) == CUDA_SUCCESS;
  for (size_t i = 0; ok && i < n; ++i) {
    CUgraphNodeType type;
    if (g_api.get_type(nodes[i], &type) != CUDA_SUCCESS) {
      ok = false;
    } else if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
      CUDA_KERNEL_NODE_PARAMS_v2 p{};
      ok = g_api.kernel_params != nullptr && g_api.kernel_params(nodes[i], &p) == CUDA_SUCCESS &&
           Append(rec, nodes[i], static_cast<int64_t>(p.gridDimX) * p.gridDimY * p.gridDimZ);
    } else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = nullptr;
      ok = g_api.child_graph != nullptr && g_api.child_graph(nodes[i], &child) == CUDA_SUCCESS &&
           Walk(child, rec, depth + 1);
    }
  }
  std::free(nodes);
  return ok;
}

void FreeRecord(ExecRecord* rec) {
  if (rec == nullptr)
    return;
  std::free(rec->nodes);
  rec->~ExecRecord();
  std::free(rec);
}

ExecRecord* Lookup(CUgraphExec exec) {
  int64_t v = 0;
  if (!Map().Find(reinterpret_cast<uint64_t>(exec), &v))
    return nullptr;
  return reinterpret_cast<ExecRecord*>(static_cast<intptr_t>(v));
}

}  // namespace

void RecordGraphExec(CUgraphExec exec, CUgraph graph) {
  if (exec == nullptr)
    return;
  HandleMap& map = Map();
  void* mem = std::calloc(1, sizeof(ExecRecord));
  if (mem == nullptr)
    return;
  auto* rec = new (mem) ExecRecord{};
  if (!Walk(graph, rec, 0)) {
    LogVerbose("could not walk graph %p; exec %p is launched uncharged", static_cast<void*>(graph),
               static_cast<void*>(exec));
    rec->total.store(0, std::memory_order_relaxed);
    rec->count = 0;
  }
  int64_t old = 0;
  const bool had = map.Erase(reinterpret_cast<uint64_t>(exec), &old);
  if (!map.Insert(reinterpret_cast<uint64_t>(exec),
                  static_cast<int64_t>(reinterpret_cast<intptr_t>(rec)))) {
    FreeRecord(rec);
  }
  if (had)
    FreeRecord(reinterpret_cast<ExecRecord*>(static_cast<intptr_t>(old)));
}

int64_t GraphExecCost(CUgraphExec exec) {
  const ExecRecord* rec = Lookup(exec);
  return rec != nullptr ? rec->total.load(std::memory_order_relaxed) : 0;
}

void UpdateGraphExecNode(CUgraphExec exec, CUgraphNode node, int64_t blocks) {
  ExecRecord* rec = Lookup(exec);
  if (rec == nullptr)
    return;
  for (size_t i = 0; i < rec->count; ++i) {
    if (rec->nodes[i].node != node)
      continue;
    rec->total.fetch_add(blocks - rec->nodes[i].blocks, std::memory_order_relaxed);
    rec->nodes[i].blocks = blocks;
    return;
  }
}

void ForgetGraphExec(CUgraphExec exec) {
  int64_t old = 0;
  if (Map().Erase(reinterpret_cast<uint64_t>(exec), &old)) {
    FreeRecord(reinterpret_cast<ExecRecord*>(static_cast<intptr_t>(old)));
  }
}

}  // namespace sluice::intercept
