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
#include "runtime/paramstore/param_arena.h"

namespace sluice::runtime {

struct MulticastBenchOptions {
  int receivers = 3;                         // 1-16
  double size_gib = 1;                       // (0, 16]
  int64_t chunk_bytes = int64_t{4} << 20;
  int repeat = 3;                            // transfers per figure; the median is reported
  int load_threads = 4;
  std::string dir = "/tmp";                  // where the model file is written
  Pretouch pretouch = Pretouch::kAtStart;    // every store's arena
  bool huge_pages = false;
};

struct MulticastBenchResult {
  double one_transfer_s = 0;  // origin -> one receiver
  double chain_s = 0;         // origin -> receivers..., until the last holds it all
  double ratio = 0;           // chain_s / one_transfer_s
  // The CPU behind those figures (docs/parameter-store.md "Where a chain's CPU goes"): process
  // CPU seconds (user + system, every thread; loopback TCP's softirq work is charged to the
  // threads that send) and context switches, medians per transfer; cpus = CPUs this process may
  // run on. cpu_floor_ratio = (chain_cpu_s / cpus) / one_transfer_s: the ratio a chain would
  // reach if its CPU work overlapped perfectly on every CPU.
  double one_transfer_cpu_s = 0;
  double chain_cpu_s = 0;
  double one_transfer_switches = 0;
  double chain_switches = 0;
  int cpus = 0;
  double cpu_floor_ratio = 0;
  double load_gib_per_s = 0;  // LoadFile of the model file (page cache warm: just written)
  double memcpy_gib_per_s = 0;  // one thread, best of 3, warm pages
  double memcpy_fresh_gib_per_s = 0;  // one thread into never-written pages (what a fill pays)
  double arena_pretouch_s = 0;        // the slowest store's Create (touching its arena)
  bool huge_pages = false;            // the arenas got huge pages
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
  std::string emulated_dir;  // the emulated libcuda.so.1; empty = located
  // "auto": the emulated device when found, else "none" (device_note says why); "emulated":
  // NotFound when it is not found; "none": memcpy into a host buffer standing in for the device.
  std::string device = "auto";
  Pretouch pretouch = Pretouch::kAtStart;
  bool huge_pages = false;
  bool attach_comparison = true;  // also time /dev/shm and fork (docs/parameter-store.md)
};

// Every *_ms figure is a median of `repeat`; docs/parameter-store.md defines each.
struct CacheBenchResult {
  // load: a pre-started instance holding a populated mapping of the model's cached segment
  // (its standby) copies it into its device memory; bytes / that copy's time.
  double load_gib_per_s = 0;
  double memcpy_gib_per_s = 0;        // one thread, warm pages
  double memcpy_fresh_gib_per_s = 0;  // into never-written pages
  double ratio = 0;                   // load / memcpy
  // The same copy with getting the fds and mapping them (no standby) counted in.
  double load_with_attach_gib_per_s = 0;
  double store_fill_gib_per_s = 0;    // disk (page cache warm) -> the store's arena, LoadFile
  double arena_pretouch_s = 0;        // the store's Create: touching its whole arena once
  // The two cold starts the platform has (docs/parameter-store.md "Cache vs disk"):
  // from cache: a pre-started runtime process (the agent's pool: exec'd, device set up) gets
  // the store's fds, reads them and copies to the device; from disk: what a start without the
  // pool and the host cache pays: a new process (exec, driver and device set-up) reads the
  // file with its page cache dropped (fdatasync + POSIX_FADV_DONTNEED, then O_DIRECT) and copies
  // it to the device. The speedup is disk / cache.
  double cold_start_ms_from_cache = 0;
  double cold_start_ms_from_disk = 0;
  // The disk read alone in the pre-started process (page cache dropped, O_DIRECT + copy): the
  // part of the disk start that the store replaces, without the process start.
  double cold_start_ms_from_disk_prestarted = 0;
  // The same with a process spawned for each start (exec, driver and device set-up included).
  double cold_start_ms_from_cache_spawned = 0;
  double cold_start_ms_from_disk_spawned = 0;
  double spawn_ms = 0;                // spawn + exit of the reader doing nothing
  double device_setup_ms = 0;         // the spawned reader's driver init + device memory
  std::string disk_path = "O_DIRECT"; // how the disk path avoids the page cache
  std::string device;                 // "emulated" (cuMemcpyHtoD) or "none"
  std::string device_note;            // why the device is "none", when it is
  bool huge_pages = false;
  std::string huge_pages_note;
  // One full read pass of the parameters by a new process, three ways (docs/parameter-store.md).
  double attach_ms_memfd_scm = 0, attach_ms_shm_open = 0, attach_ms_fork_cow = 0;
  int64_t bytes = 0;
};

absl::StatusOr<CacheBenchResult> RunCacheBench(const CacheBenchOptions& options);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_NODE_CLI_PARAM_BENCH_H_
