// The parameter store's benchmarks behind `sluice node multicast-bench` and `sluice node
// cache-bench` (docs/parameter-store.md, figures in docs/PERFORMANCE.md): memcpy bandwidth, the
// multi-threaded disk load, one transfer vs a chain over loopback TCP (in-process agents, each
// with its own store), and cold starts of a process mapping the store's segment vs reading a file.
// Thread safety: each Run* call is self-contained (it starts and stops its own threads).
#ifndef SLUICE_RUNTIME_NODE_CLI_PARAM_BENCH_H_
#define SLUICE_RUNTIME_NODE_CLI_PARAM_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::runtime {

struct MulticastBenchOptions {
  int receivers = 3;                         // 1-16
  double size_gib = 1;                       // (0, 16]
  int64_t chunk_bytes = int64_t{4} << 20;
  int repeat = 3;                            // transfers per figure; the median is reported
  int load_threads = 4;
  std::string dir = "/tmp";                  // where the model file is written
};

struct MulticastBenchResult {
  double one_transfer_s = 0;  // origin -> one receiver
  double chain_s = 0;         // origin -> receivers..., until the last holds it all
  double ratio = 0;           // chain_s / one_transfer_s
  double load_gib_per_s = 0;  // LoadFile of the model file (page cache warm: just written)
  double memcpy_gib_per_s = 0;  // one thread, best of 3, warm pages
  double memcpy_fresh_gib_per_s = 0;  // one thread into never-written pages (what a fill pays)
  int64_t bytes = 0;
  std::vector<std::string> failed;  // chain members that failed (should be empty)
};

// InvalidArgument naming a bad option.
absl::StatusOr<MulticastBenchResult> RunMulticastBench(const MulticastBenchOptions& options);

struct CacheBenchOptions {
  double size_gib = 1;
  int repeat = 3;
  int load_threads = 4;
  std::string dir = "/tmp";
  std::string reader;        // sluice-param-reader; empty = located (SLUICE_BIN_DIR, build tree)
  std::string emulated_dir;  // the emulated libcuda.so.1; empty = located; none found = memcpy
};

struct CacheBenchResult {
  double load_gib_per_s = 0;
  double memcpy_gib_per_s = 0;        // warm pages, as MulticastBenchResult
  double memcpy_fresh_gib_per_s = 0;  // into never-written pages
  double ratio = 0;                   // load / memcpy
  double cold_start_ms_from_cache = 0;  // spawn, fd over SCM_RIGHTS, map, copy to device, exit
  double cold_start_ms_from_disk = 0;   // spawn, read(2) the file (page cache dropped), copy, exit
  double cold_start_ms_from_disk_warm = 0;  // the same with the file in the page cache
  bool disk_cache_dropped = false;      // posix_fadvise(DONTNEED) after fsync succeeded
  std::string device;                   // "emulated" (cuMemcpyHtoD) or "none" (checksum only)
  double spawn_ms = 0;                  // spawn + exit of the reader doing nothing
  // One full read pass of the parameters by a new process, three ways (docs/parameter-store.md).
  double attach_ms_memfd_scm = 0, attach_ms_shm_open = 0, attach_ms_fork_cow = 0;
  int64_t bytes = 0;
};

absl::StatusOr<CacheBenchResult> RunCacheBench(const CacheBenchOptions& options);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_NODE_CLI_PARAM_BENCH_H_
