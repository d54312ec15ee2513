// A tiny fake CUDA driver (built as libcuda.so.1 in the build tree) for libsluice_cuda.so's unit
// tests: it exports the handful of cu* entry points the interception library wraps or calls,
// a cuGetProcAddress with the real driver's version rules, and fake_* helpers the tests use to
// build graphs and streams and to read what the "device" saw. Not a device model (that is
// src/intercept/emulated). Thread-safe: counters are atomics, tables are under one mutex.
#ifndef SLUICE_INTERCEPT_TESTING_FAKE_DRIVER_H_
#define SLUICE_INTERCEPT_TESTING_FAKE_DRIVER_H_

#include <cuda.h>

#include <atomic>
#include <cstdint>

namespace sluice::intercept::fake {

// What the fake device observed. Read through fake_state().
struct FakeState {
  std::atomic<int64_t> launches{0};         // every launch entry point, graphs included
  std::atomic<int64_t> launched_blocks{0};  // kernel launches only (graphs excluded)
  std::atomic<int64_t> graph_launches{0};
  std::atomic<const char*> last_entry{""};  // symbol of the last launch/alloc entry point called
  std::atomic<int64_t> live_bytes{0};       // device memory currently allocated
  std::atomic<int64_t> allocations{0};      // successful allocations, all paths
  std::atomic<int64_t> frees{0};
  std::atomic<int64_t> total_bytes{int64_t{1} << 30};  // device capacity (tests may lower it)
  std::atomic<int> fail_next_free{0};  // make the next free return CUDA_ERROR_INVALID_VALUE
  std::atomic<int> gpa_calls{0};       // cuGetProcAddress calls, both versions
  std::atomic<int64_t> syncs{0};       // synchronisation calls and copies (fake_driver_sync.cc)
  std::atomic<const char*> last_sync{""};  // symbol of the last of them
  std::atomic<int> fail_next_sync{0};  // make the next of them return CUDA_ERROR_INVALID_VALUE
};

}  // namespace sluice::intercept::fake

extern "C" {
// Helpers for tests (not driver API). Resolve them with dlsym on the fake's handle.
sluice::intercept::fake::FakeState* fake_state();
CUstream fake_stream_new();
CUgraph fake_graph_new();
// Adds a kernel node with grid x*y*z; returns the node.
CUgraphNode fake_graph_add_kernel(CUgraph graph, unsigned x, unsigned y, unsigned z);
// Adds a child-graph node embedding `child`.
CUgraphNode fake_graph_add_child(CUgraph graph, CUgraph child);
// Adds a node of another type (memset-like), which costs nothing.
CUgraphNode fake_graph_add_empty(CUgraph graph);
}

// Signatures of the helpers, for dlsym casts.
using FakeStateFn = sluice::intercept::fake::FakeState* (*)();
using FakeStreamNewFn = CUstream (*)();
using FakeGraphNewFn = CUgraph (*)();
using FakeGraphAddKernelFn = CUgraphNode (*)(CUgraph, unsigned, unsigned, unsigned);
using FakeGraphAddChildFn = CUgraphNode (*)(CUgraph, CUgraph);
using FakeGraphAddEmptyFn = CUgraphNode (*)(CUgraph);

#endif  // SLUICE_INTERCEPT_TESTING_FAKE_DRIVER_H_
