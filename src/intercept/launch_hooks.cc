// Exported launch and stream-capture wrappers. A launch costs gridX*gridY*gridZ blocks (Dilu's
// token unit); cuGraphLaunch costs the sum over the graph's kernel nodes, computed when the graph
// was instantiated (graph_cost.h). Launches into a capturing stream only record graph nodes and
// are not charged; the driver is asked about capture only while some capture is active in this
// process (tracked by the BeginCapture/EndCapture hooks), so the common path never calls it.
#include <atomic>
#include <cstdint>

#include "intercept/gate.h"
#include "intercept/graph_cost.h"
#include "intercept/hooks.h"
#include "intercept/real_driver.h"

namespace sluice::intercept {
namespace {

using IsCapturingFn = CUresult (*)(CUstream, CUstreamCaptureStatus*);
std::atomic<IsCapturingFn> g_is_capturing[2];

// Capture status of `stream`; `ptsz` picks the per-thread-default-stream meaning of stream 0.
CUstreamCaptureStatus CaptureStatus(CUstream stream, bool ptsz) {
  IsCapturingFn fn = g_is_capturing[ptsz].load(std::memory_order_relaxed);
  if (fn == nullptr) {
    fn = reinterpret_cast<IsCapturingFn>(
        RealSymbol(ptsz ? "cuStreamIsCapturing_ptsz" : "cuStreamIsCapturing"));
    if (fn == nullptr)
      return CU_STREAM_CAPTURE_STATUS_NONE;
    g_is_capturing[ptsz].store(fn, std::memory_order_relaxed);
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (fn(stream, &status) != CUDA_SUCCESS)
    return CU_STREAM_CAPTURE_STATUS_NONE;
  return status;
}

inline int64_t Blocks(unsigned int x, unsigned int y, unsigned int z) {
  return static_cast<int64_t>(x) * y * z;
}

// Admits `cost` tokens (unless `stream` is capturing), runs `launch`, settles the tokens.
template <typename Launch>
inline CUresult Gated(int64_t cost, CUstream stream, bool ptsz, Launch&& launch) {
  if (AnyCaptureActive() && CaptureStatus(stream, ptsz) == CU_STREAM_CAPTURE_STATUS_ACTIVE)
      [[unlikely]] {
    return launch();
  }
  Registration* reg = nullptr;
  const CUresult admitted = AdmitLaunch(cost, &reg);
  if (admitted != CUDA_SUCCESS)
    return admitted;
  const CUresult r = launch();
  FinishLaunch(reg, cost, r);
  return r;
}

}  // namespace
}  // namespace sluice::intercept

using sluice::intercept::HookScope;
using sluice::intercept::InHook;

#define SLUICE_LAUNCH_KERNEL(sym, ptsz)                                                   \
  extern "C" CUresult SluiceHook_##sym(CUfunction f, unsigned int gx, unsigned int gy,    \
                                       unsigned int gz, unsigned int bx, unsigned int by, \
                                       unsigned int bz, unsigned int shared, CUstream s,  \
                                       void** params, void** extra) {                     \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);                  \
    if (InHook()) [[unlikely]]                                                            \
      return real(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);                   \
    HookScope scope;                                                                      \
    return sluice::intercept::Gated(sluice::intercept::Blocks(gx, gy, gz), s, ptsz, [&] { \
      return real(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);                   \
    });                                                                                   \
  }
SLUICE_LAUNCH_KERNEL(cuLaunchKernel, false)
SLUICE_LAUNCH_KERNEL(cuLaunchKernel_ptsz, true)

#define SLUICE_LAUNCH_COOPERATIVE(sym, ptsz)                                              \
  extern "C" CUresult SluiceHook_##sym(                                                   \
      CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,   \
      unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void** params) { \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);                  \
    if (InHook()) [[unlikely]]                                                            \
      return real(f, gx, gy, gz, bx, by, bz, shared, s, params);                          \
    HookScope scope;                                                                      \
    return sluice::intercept::Gated(sluice::intercept::Blocks(gx, gy, gz), s, ptsz, [&] { \
      return real(f, gx, gy, gz, bx, by, bz, shared, s, params);                          \
    });                                                                                   \
  }
SLUICE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel, false)
SLUICE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true)

#define SLUICE_LAUNCH_EX(sym, ptsz)                                                               \
  extern "C" CUresult SluiceHook_##sym(const CUlaunchConfig* config, CUfunction f, void** params, \
                                       void** extra) {                                            \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);                          \
    if (InHook() || config == nullptr) [[unlikely]]                                               \
      return real(config, f, params, extra);                                                      \
    HookScope scope;                                                                              \
    const int64_t cost =                                                                          \
        sluice::intercept::Blocks(config->gridDimX, config->gridDimY, config->gridDimZ);          \
    return sluice::intercept::Gated(cost, config->hStream, ptsz,                                  \
                                    [&] { return real(config, f, params, extra); });              \
  }
SLUICE_LAUNCH_EX(cuLaunchKernelEx, false)
SLUICE_LAUNCH_EX(cuLaunchKernelEx_ptsz, true)

#define SLUICE_GRAPH_LAUNCH(sym, ptsz)                                               \
  extern "C" CUresult SluiceHook_##sym(CUgraphExec exec, CUstream s) {               \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);             \
    if (InHook()) [[unlikely]]                                                       \
      return real(exec, s);                                                          \
    HookScope scope;                                                                 \
    return sluice::intercept::Gated(sluice::intercept::GraphExecCost(exec), s, ptsz, \
                                    [&] { return real(exec, s); });                  \
  }
SLUICE_GRAPH_LAUNCH(cuGraphLaunch, false)
SLUICE_GRAPH_LAUNCH(cuGraphLaunch_ptsz, true)

// Capture begins: count it once the driver accepted it.
#define SLUICE_BEGIN_CAPTURE(sym, params, args)                          \
  extern "C" CUresult SluiceHook_##sym params {                          \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym); \
    const CUresult r = real args;                                        \
    if (r == CUDA_SUCCESS)                                               \
      sluice::intercept::CaptureBegan();                                 \
    return r;                                                            \
  }
SLUICE_BEGIN_CAPTURE(cuStreamBeginCapture, (CUstream s), (s))
SLUICE_BEGIN_CAPTURE(cuStreamBeginCapture_ptsz, (CUstream s), (s))
SLUICE_BEGIN_CAPTURE(cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode m), (s, m))
SLUICE_BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz, (CUstream s, CUstreamCaptureMode m), (s, m))
SLUICE_BEGIN_CAPTURE(cuStreamBeginCaptureToGraph,
                     (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* data,
                      size_t n, CUstreamCaptureMode m),
                     (s, g, deps, data, n, m))
SLUICE_BEGIN_CAPTURE(cuStreamBeginCaptureToGraph_ptsz,
                     (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* data,
                      size_t n, CUstreamCaptureMode m),
                     (s, g, deps, data, n, m))

// Capture ends (successfully or invalidated) only if the stream was capturing before the call.
#define SLUICE_END_CAPTURE(sym, ptsz)                                                 \
  extern "C" CUresult SluiceHook_##sym(CUstream s, CUgraph* graph) {                  \
    SLUICE_REAL_OR_RETURN_IDS(real, SluicePfn_##sym, kHook_##sym, #sym);              \
    const bool was_capturing =                                                        \
        sluice::intercept::CaptureStatus(s, ptsz) != CU_STREAM_CAPTURE_STATUS_NONE;   \
    const CUresult r = real(s, graph);                                                \
    if (was_capturing &&                                                              \
        sluice::intercept::CaptureStatus(s, ptsz) == CU_STREAM_CAPTURE_STATUS_NONE) { \
      sluice::intercept::CaptureEnded();                                              \
    }                                                                                 \
    return r;                                                                         \
  }
SLUICE_END_CAPTURE(cuStreamEndCapture, false)
SLUICE_END_CAPTURE(cuStreamEndCapture_ptsz, true)
