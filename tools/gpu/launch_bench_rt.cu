// launch_bench_rt: host-side cost of one launch through the CUDA runtime API, for
// scripts/gpu-validate.sh (built with nvcc; real GPU only). The runtime reaches the driver
// through cuGetProcAddress, so this measures the interception path PyTorch takes, where
// launch_bench measures the exported-symbol path. Prints one JSON line ("launch_bench"/"error").
//   --entry kernel|graph  a <<<>>> launch of an empty kernel, or cudaGraphLaunch of a graph
//                         holding one (captured from a stream; default kernel)
//   --launches N (default 20000), --batch B (default 250), --warmup W (default 2000), --grid G
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kit_common.h"

namespace {

__global__ void Noop() {}

struct Options {
  std::string entry = "kernel";
  int launches = 20000;
  int batch = 250;
  int warmup = 2000;
  unsigned grid = 1;
};

#define CHECK_RT(call)                                                              \
  do {                                                                              \
    cudaError_t r_ = (call);                                                        \
    if (r_ != cudaSuccess) {                                                        \
      std::printf("{\"event\":\"error\",\"call\":%s,\"code\":%d,\"message\":%s}\n", \
                  sluice_kit::JsonString(#call).c_str(), static_cast<int>(r_),      \
                  sluice_kit::JsonString(cudaGetErrorString(r_)).c_str());          \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--entry")
      o->entry = v;
    else if (a == "--launches")
      o->launches = std::atoi(v);
    else if (a == "--batch")
      o->batch = std::atoi(v);
    else if (a == "--warmup")
      o->warmup = std::atoi(v);
    else if (a == "--grid")
      o->grid = static_cast<unsigned>(std::atoi(v));
    else
      return false;
  }
  return argc % 2 == 1 && (o->entry == "kernel" || o->entry == "graph") && o->launches > 0 &&
         o->batch > 0 && o->warmup >= 0 && o->grid > 0;
}

struct Launcher {
  cudaStream_t stream = nullptr;
  cudaGraphExec_t exec = nullptr;  // set for --entry graph
  unsigned grid = 1;

  cudaError_t operator()() const {
    if (exec != nullptr)
      return cudaGraphLaunch(exec, stream);
    Noop<<<grid, 1, 0, stream>>>();
    return cudaGetLastError();
  }
};

std::vector<int64_t> TimeEachLaunch(const Launcher& launch, const Options& o) {
  std::vector<int64_t> ns;
  ns.reserve(static_cast<size_t>(o.launches));
  while (static_cast<int>(ns.size()) < o.launches) {
    for (int i = 0; i < o.batch && static_cast<int>(ns.size()) < o.launches; ++i) {
      const int64_t t0 = sluice_kit::NowNs();
      CHECK_RT(launch());
      ns.push_back(sluice_kit::NowNs() - t0);
    }
    CHECK_RT(cudaStreamSynchronize(launch.stream));
  }
  return ns;
}

void TimeBatches(const Launcher& launch, const Options& o, std::vector<int64_t>* host_ns,
                 std::vector<int64_t>* gpu_ns) {
  cudaEvent_t start, stop;
  CHECK_RT(cudaEventCreate(&start));
  CHECK_RT(cudaEventCreate(&stop));
  for (int done = 0; done < o.launches; done += o.batch) {
    CHECK_RT(cudaEventRecord(start, launch.stream));
    const int64_t t0 = sluice_kit::NowNs();
    for (int i = 0; i < o.batch; ++i)
      CHECK_RT(launch());
    const int64_t t1 = sluice_kit::NowNs();
    CHECK_RT(cudaEventRecord(stop, launch.stream));
    CHECK_RT(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_RT(cudaEventElapsedTime(&ms, start, stop));
    host_ns->push_back((t1 - t0) / o.batch);
    gpu_ns->push_back(static_cast<int64_t>(ms * 1e6 / o.batch));
  }
  CHECK_RT(cudaEventDestroy(start));
  CHECK_RT(cudaEventDestroy(stop));
}

// A graph of one empty-kernel node, captured from the stream.
cudaGraphExec_t CaptureGraph(cudaStream_t stream, unsigned grid) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_RT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  Noop<<<grid, 1, 0, stream>>>();
  CHECK_RT(cudaGetLastError());
  CHECK_RT(cudaStreamEndCapture(stream, &graph));
  CHECK_RT(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_RT(cudaGraphDestroy(graph));
  return exec;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: launch_bench_rt [--entry kernel|graph] [--launches N] "
                 "[--batch B] [--warmup W] [--grid G]\n");
    return 2;
  }
  cudaDeviceProp prop;
  int driver_version = 0, runtime_version = 0;
  CHECK_RT(cudaSetDevice(0));
  CHECK_RT(cudaGetDeviceProperties(&prop, 0));
  CHECK_RT(cudaDriverGetVersion(&driver_version));
  CHECK_RT(cudaRuntimeGetVersion(&runtime_version));
  Launcher launch;
  launch.grid = o.grid;
  CHECK_RT(cudaStreamCreateWithFlags(&launch.stream, cudaStreamNonBlocking));
  if (o.entry == "graph")
    launch.exec = CaptureGraph(launch.stream, o.grid);
  for (int i = 0; i < o.warmup; ++i)
    CHECK_RT(launch());
  CHECK_RT(cudaStreamSynchronize(launch.stream));

  std::vector<int64_t> each = TimeEachLaunch(launch, o);
  std::vector<int64_t> batch_host, batch_gpu;
  TimeBatches(launch, o, &batch_host, &batch_gpu);
  std::printf(
      "{\"event\":\"launch_bench\",\"api\":\"runtime\",\"entry\":\"%s\",\"device\":%s,"
      "\"emulated\":false,\"driver_version\":%d,\"runtime_version\":%d,\"grid\":%u,"
      "\"launches\":%d,\"batch\":%d,\"per_launch_ns\":%s,"
      "\"batch_host_ns_per_launch\":%s,\"batch_gpu_ns_per_kernel\":%s,\"mapped\":%s}\n",
      launch.exec != nullptr ? "cudaGraphLaunch" : "cudaLaunchKernel",
      sluice_kit::JsonString(prop.name).c_str(), driver_version, runtime_version, o.grid,
      o.launches, o.batch, sluice_kit::SummaryJson(sluice_kit::Summarize(each)).c_str(),
      sluice_kit::SummaryJson(sluice_kit::Summarize(batch_host)).c_str(),
      sluice_kit::SummaryJson(sluice_kit::Summarize(batch_gpu)).c_str(),
      sluice_kit::MappedJson(sluice_kit::MappedLibraries()).c_str());
  if (launch.exec != nullptr)
    CHECK_RT(cudaGraphExecDestroy(launch.exec));
  CHECK_RT(cudaStreamDestroy(launch.stream));
  return 0;
}
