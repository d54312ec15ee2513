// Graph launch costs through libsluice_cuda.so: computed once at instantiation (every
// instantiate entry point), summed over kernel nodes including child graphs, kept in step with
// cuGraphExec*SetParams and cuGraphExecUpdate, and charged per cuGraphLaunch (both variants).
#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

#include "intercept/testing/child.h"
#include "intercept/testing/fake_driver.h"
#include "intercept/testing/fake_token_server.h"

namespace sluice::intercept {
namespace {

using testing::FakeServerOptions;
using testing::FakeTokenServer;
using testing::OpenFakeDriver;
using testing::OpenIntercept;
using testing::RunInChild;
using testing::SetBaseEnv;
using testing::Sym;

using SluicePfnGraphInstantiateV1Test = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*,
                                                     size_t);

struct GraphRig {
  std::unique_ptr<FakeTokenServer> server;
  void* lib = nullptr;
  void* fake = nullptr;
  CUgraph graph = nullptr;
  CUgraphNode first_kernel = nullptr;

  GraphRig() {
    SetBaseEnv();
    FakeServerOptions options;
    options.initial_budget = 100000;
    server = FakeTokenServer::Start(options);
    setenv("SLUICE_TOKEN_SOCKET", server->socket_path().c_str(), 1);
    setenv("SLUICE_GPU_UUID", server->gpu_uuid().c_str(), 1);
    lib = OpenIntercept();
    fake = OpenFakeDriver();
    // 4 + 2*3 blocks, a memset-like node, and a child graph with 5 + (a grandchild with 7).
    auto new_graph = Sym<FakeGraphNewFn>(fake, "fake_graph_new");
    auto add_kernel = Sym<FakeGraphAddKernelFn>(fake, "fake_graph_add_kernel");
    auto add_child = Sym<FakeGraphAddChildFn>(fake, "fake_graph_add_child");
    graph = new_graph();
    first_kernel = add_kernel(graph, 4, 1, 1);
    add_kernel(graph, 2, 3, 1);
    Sym<FakeGraphAddEmptyFn>(fake, "fake_graph_add_empty")(graph);
    CUgraph child = new_graph();
    add_kernel(child, 5, 1, 1);
    CUgraph grandchild = new_graph();
    add_kernel(grandchild, 7, 1, 1);
    add_child(child, grandchild);
    add_child(graph, child);
    // Register with the server through a one-block launch, so budgets are in place.
    EXPECT_EQ(Sym<PFN_cuLaunchKernel_v4000>(lib, "cuLaunchKernel")(nullptr, 1, 1, 1, 1, 1, 1, 0,
                                                                   nullptr, nullptr, nullptr),
              CUDA_SUCCESS);
  }
  int64_t budget() const { return std::atomic_ref<int64_t>(server->slot(0)->budget).load(); }
  // Blocks charged by one cuGraphLaunch (or _ptsz) of `exec`.
  int64_t LaunchCost(CUgraphExec exec, bool ptsz = false) {
    const int64_t before = budget();
    const CUresult r =
        ptsz ? Sym<PFN_cuGraphLaunch_v10000_ptsz>(lib, "cuGraphLaunch_ptsz")(exec, nullptr)
             : Sym<PFN_cuGraphLaunch_v10000>(lib, "cuGraphLaunch")(exec, nullptr);
    EXPECT_EQ(r, CUDA_SUCCESS);
    return before - budget();
  }
};

constexpr int64_t kGraphBlocks = 4 + 6 + 5 + 7;

TEST(GraphTest, EveryInstantiatePathRecordsTheKernelBlocks) {
  RunInChild([] {
    GraphRig rig;
    using Instantiate = std::function<CUresult(CUgraphExec*)>;
    auto v1 = Sym<SluicePfnGraphInstantiateV1Test>(rig.lib, "cuGraphInstantiate");
    auto v2 = Sym<SluicePfnGraphInstantiateV1Test>(rig.lib, "cuGraphInstantiate_v2");
    auto flags =
        Sym<PFN_cuGraphInstantiateWithFlags_v11040>(rig.lib, "cuGraphInstantiateWithFlags");
    auto params =
        Sym<PFN_cuGraphInstantiateWithParams_v12000>(rig.lib, "cuGraphInstantiateWithParams");
    auto params_ptsz = Sym<PFN_cuGraphInstantiateWithParams_v12000_ptsz>(
        rig.lib, "cuGraphInstantiateWithParams_ptsz");
    CUgraph g = rig.graph;
    const std::vector<std::pair<std::string, Instantiate>> paths = {
        {"cuGraphInstantiate",
         [&](CUgraphExec* e) {
           return v1(e, g, nullptr, nullptr, 0);
         }},
        {"cuGraphInstantiate_v2",
         [&](CUgraphExec* e) {
           return v2(e, g, nullptr, nullptr, 0);
         }},
        {"cuGraphInstantiateWithFlags",
         [&](CUgraphExec* e) {
           return flags(e, g, 0);
         }},
        {"cuGraphInstantiateWithParams",
         [&](CUgraphExec* e) {
           return params(e, g, nullptr);
         }},
        {"cuGraphInstantiateWithParams_ptsz",
         [&](CUgraphExec* e) {
           return params_ptsz(e, g, nullptr);
         }},
    };
    auto destroy = Sym<PFN_cuGraphExecDestroy_v10000>(rig.lib, "cuGraphExecDestroy");
    for (const auto& [name, instantiate] : paths) {
      SCOPED_TRACE(name);
      CUgraphExec exec = nullptr;
      ASSERT_EQ(instantiate(&exec), CUDA_SUCCESS);
      EXPECT_EQ(rig.LaunchCost(exec), kGraphBlocks);
      EXPECT_EQ(rig.LaunchCost(exec, /*ptsz=*/true), kGraphBlocks);
      EXPECT_EQ(destroy(exec), CUDA_SUCCESS);
    }
    auto* device = Sym<FakeStateFn>(rig.fake, "fake_state")();
    EXPECT_EQ(device->graph_launches.load(), 10);
    EXPECT_EQ(std::atomic_ref<int64_t>(rig.server->slot(0)->kernels_total).load(), 11);
  });
}

TEST(GraphTest, CostFollowsNodeParameterChangesAndUpdates) {
  RunInChild([] {
    GraphRig rig;
    CUgraphExec exec = nullptr;
    ASSERT_EQ(Sym<PFN_cuGraphInstantiateWithFlags_v11040>(rig.lib, "cuGraphInstantiateWithFlags")(
                  &exec, rig.graph, 0),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), kGraphBlocks);

    CUDA_KERNEL_NODE_PARAMS_v1 p1{};
    p1.gridDimX = 10;
    p1.gridDimY = p1.gridDimZ = 1;
    ASSERT_EQ(Sym<PFN_cuGraphExecKernelNodeSetParams_v10010>(
                  rig.lib, "cuGraphExecKernelNodeSetParams")(exec, rig.first_kernel, &p1),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), kGraphBlocks - 4 + 10);

    CUDA_KERNEL_NODE_PARAMS_v2 p2{};
    p2.gridDimX = 3;
    p2.gridDimY = 3;
    p2.gridDimZ = 1;
    ASSERT_EQ(Sym<PFN_cuGraphExecKernelNodeSetParams_v12000>(
                  rig.lib, "cuGraphExecKernelNodeSetParams_v2")(exec, rig.first_kernel, &p2),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), kGraphBlocks - 4 + 9);

    CUgraphNodeParams generic{};
    generic.type = CU_GRAPH_NODE_TYPE_KERNEL;
    generic.kernel.gridDimX = 1;
    generic.kernel.gridDimY = generic.kernel.gridDimZ = 1;
    ASSERT_EQ(Sym<PFN_cuGraphExecNodeSetParams_v12020>(rig.lib, "cuGraphExecNodeSetParams")(
                  exec, rig.first_kernel, &generic),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), kGraphBlocks - 4 + 1);

    // An update adopts another graph's parameters wholesale.
    CUgraph other = Sym<FakeGraphNewFn>(rig.fake, "fake_graph_new")();
    Sym<FakeGraphAddKernelFn>(rig.fake, "fake_graph_add_kernel")(other, 8, 8, 1);
    CUgraphExecUpdateResultInfo info{};
    ASSERT_EQ(
        Sym<PFN_cuGraphExecUpdate_v12000>(rig.lib, "cuGraphExecUpdate_v2")(exec, other, &info),
        CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), 64);
    ASSERT_EQ(Sym<PFN_cuGraphExecUpdate_v10020>(rig.lib, "cuGraphExecUpdate")(exec, rig.graph,
                                                                              nullptr, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), kGraphBlocks);
  });
}

TEST(GraphTest, UnknownExecIsLaunchedUncharged) {
  RunInChild([] {
    GraphRig rig;
    // Instantiated behind our back (straight from the driver): no record, no charge.
    CUgraphExec exec = nullptr;
    ASSERT_EQ(Sym<PFN_cuGraphInstantiateWithFlags_v11040>(rig.fake, "cuGraphInstantiateWithFlags")(
                  &exec, rig.graph, 0),
              CUDA_SUCCESS);
    EXPECT_EQ(rig.LaunchCost(exec), 0);
  });
}

}  // namespace
}  // namespace sluice::intercept
