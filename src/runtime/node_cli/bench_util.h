// Shared pieces of the parameter store's benchmarks (param_bench.cc, cache_bench.cc): memcpy
// bandwidth (warm, and into never-written pages), model files, bench stores, medians.
// Thread safety: stateless functions; a Buffer belongs to one thread.
#ifndef SLUICE_RUNTIME_NODE_CLI_BENCH_UTIL_H_
#define SLUICE_RUNTIME_NODE_CLI_BENCH_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/paramstore/param_store.h"

namespace sluice::runtime {

inline constexpr double kGiB = 1024.0 * 1024 * 1024;

double Median(std::vector<double> v);
double SecondsSince(absl::Time since);

// Anonymous memory, populated and written once (so page faults are not timed).
struct Buffer {
  char* p = nullptr;
  size_t n = 0;
  explicit Buffer(size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// One thread, best of 3, between warm buffers.
absl::StatusOr<double> MemcpyGiBps(int64_t bytes);
// One thread into a fresh mapping (what any fill of never-written memory pays).
absl::StatusOr<double> FreshMemcpyGiBps(int64_t bytes);
// A model file of `bytes` pseudo-random bytes under `dir`, fsync'ed; InvalidArgument naming
// field 'dir' when it cannot be written.
absl::StatusOr<std::string> WriteModelFile(const std::string& dir, int64_t bytes);
// InvalidArgument naming --size-gib unless in (0, 16].
absl::Status ValidateSize(double size_gib);
// A store just large enough for one model of `bytes` under the 85 % threshold, its arena
// touched as `pretouch` says; `pretouch_s` gets the time Create took.
absl::StatusOr<std::unique_ptr<ParamStore>> BenchStore(int64_t bytes, Pretouch pretouch,
                                                       bool huge_pages, double& pretouch_s);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_NODE_CLI_BENCH_UTIL_H_
