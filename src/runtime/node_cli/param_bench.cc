// Each figure is the median of `repeat` runs; memcpy is the best of 3 on one thread (the copy a
// single loader or receiver thread can do). Everything runs on this machine's loopback, so TCP
// copies share the CPU with the receivers (docs/parameter-store.md says what that costs).
#include "runtime/node_cli/param_bench.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/common/program_path.h"
#include "runtime/common/subprocess.h"
#include "runtime/paramstore/chain_receiver.h"
#include "runtime/paramstore/checksum.h"
#include "runtime/paramstore/fd_server.h"
#include "runtime/paramstore/file_loader.h"

namespace sluice::runtime {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Seconds(absl::Time since) { return absl::ToDoubleSeconds(absl::Now() - since); }

// Anonymous memory, populated (so page faults are not timed).
struct Buffer {
  char* p = nullptr;
  size_t n = 0;
  explicit Buffer(size_t bytes) : n(bytes) {
    void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    p = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
  }
  ~Buffer() {
    if (p != nullptr) munmap(p, n);
  }
};

absl::StatusOr<double> MemcpyGiBps(int64_t bytes) {
  Buffer a(static_cast<size_t>(bytes)), b(static_cast<size_t>(bytes));
  if (a.p == nullptr || b.p == nullptr) return absl::ResourceExhaustedError("memcpy buffers");
  std::memset(a.p, 1, a.n);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const absl::Time t = absl::Now();
    std::memcpy(b.p, a.p, a.n);
    best = std::max(best, static_cast<double>(bytes) / kGiB / Seconds(t));
  }
  return best;
}

// memcpy into memory never written before (a fresh anonymous mapping, faulted by the copy):
// what any fill of a new segment pays. On the shared CI VM this first touch is ~20x slower than
// a copy into warm pages (docs/parameter-store.md).
absl::StatusOr<double> FreshMemcpyGiBps(int64_t bytes) {
  Buffer a(static_cast<size_t>(bytes));
  if (a.p == nullptr) return absl::ResourceExhaustedError("memcpy buffer");
  std::memset(a.p, 1, a.n);
  void* m = mmap(nullptr, a.n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return absl::ResourceExhaustedError("memcpy buffer");
  const absl::Time t = absl::Now();
  std::memcpy(m, a.p, a.n);
  const double gibps = static_cast<double>(bytes) / kGiB / Seconds(t);
  munmap(m, a.n);
  return gibps;
}

// A model file of `bytes` pseudo-random bytes.
absl::StatusOr<std::string> WriteModelFile(const std::string& dir, int64_t bytes) {
  std::string path = absl::StrCat(dir, "/sluice-param-bench-", getpid(), ".bin");
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InvalidArgumentError("field 'dir': cannot write " + path);
  std::vector<uint64_t> block((16 << 20) / 8);
  std::mt19937_64 rng(1);
  for (uint64_t& v : block) v = rng();
  for (int64_t off = 0; off < bytes;) {
    block[0] = static_cast<uint64_t>(off);
    const size_t n = static_cast<size_t>(std::min<int64_t>(bytes - off, 16 << 20));
    if (write(fd, block.data(), n) != static_cast<ssize_t>(n)) {
      close(fd);
      unlink(path.c_str());
      return absl::ResourceExhaustedError("writing " + path);
    }
    off += static_cast<int64_t>(n);
  }
  fsync(fd);
  close(fd);
  return path;
}

std::unique_ptr<ParamStore> BenchStore(int64_t bytes) {
  ParamStoreOptions o;
  o.capacity_bytes = bytes * 2;
  return std::move(ParamStore::Create(o)).value();
}

struct BenchAgent {
  std::unique_ptr<ParamStore> store;
  std::unique_ptr<ChainReceiver> receiver;
};

absl::Status ValidateSize(double size_gib) {
  if (!(size_gib > 0 && size_gib <= 16)) {
    return absl::InvalidArgumentError("--size-gib must be in (0, 16]");
  }
  return absl::OkStatus();
}

// Median seconds of `repeat` chain transfers to `agents`, evicting between runs.
absl::StatusOr<double> TimeChain(const ParamLease& lease, std::vector<BenchAgent>& agents,
                                 const ChainOptions& co, int repeat,
                                 std::vector<std::string>& failed) {
  std::vector<std::string> chain;
  for (BenchAgent& a : agents) chain.push_back(a.receiver->address());
  std::vector<double> runs;
  for (int i = 0; i < repeat; ++i) {
    SLUICE_ASSIGN_OR_RETURN(ChainReport r, SendChain(lease, chain, co));
    runs.push_back(absl::ToDoubleSeconds(r.elapsed));
    failed.insert(failed.end(), r.failed.begin(), r.failed.end());
    for (BenchAgent& a : agents) (void)a.store->Evict(lease.model());
  }
  return Median(runs);
}

}  // namespace

absl::StatusOr<MulticastBenchResult> RunMulticastBench(const MulticastBenchOptions& o) {
  SLUICE_RETURN_IF_ERROR(ValidateSize(o.size_gib));
  if (o.receivers < 1 || o.receivers > 16) {
    return absl::InvalidArgumentError("--receivers must be in [1, 16]");
  }
  if (o.repeat < 1) return absl::InvalidArgumentError("--repeat must be >= 1");
  MulticastBenchResult r;
  r.bytes = static_cast<int64_t>(o.size_gib * kGiB);
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_gib_per_s, MemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_fresh_gib_per_s, FreshMemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(std::string path, WriteModelFile(o.dir, r.bytes));
  std::unique_ptr<ParamStore> origin = BenchStore(r.bytes);
  LoadOptions lo;
  lo.threads = o.load_threads;
  absl::StatusOr<LoadResult> load = LoadFile(*origin, "bench-model", path, lo);
  unlink(path.c_str());
  if (!load.ok()) return load.status();
  r.load_gib_per_s = load->gib_per_s();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamLease> lease, origin->Acquire("bench-model"));
  ChainOptions co;
  co.chunk_bytes = o.chunk_bytes;
  std::vector<BenchAgent> agents;
  for (int i = 0; i < o.receivers; ++i) {
    BenchAgent a{BenchStore(r.bytes), nullptr};
    ChainReceiverOptions ro;
    ro.chain = co;
    SLUICE_ASSIGN_OR_RETURN(a.receiver, ChainReceiver::Start(*a.store, ro));
    agents.push_back(std::move(a));
  }
  std::vector<BenchAgent> one;
  one.push_back(std::move(agents[0]));
  SLUICE_ASSIGN_OR_RETURN(r.one_transfer_s, TimeChain(*lease, one, co, o.repeat, r.failed));
  agents[0] = std::move(one[0]);
  SLUICE_ASSIGN_OR_RETURN(r.chain_s, TimeChain(*lease, agents, co, o.repeat, r.failed));
  r.ratio = r.one_transfer_s > 0 ? r.chain_s / r.one_transfer_s : 0;
  for (BenchAgent& a : agents) a.receiver->Stop();
  return r;
}

namespace {

// Runs the reader with `args` and `env`; the wall time from spawn to exit in ms.
absl::StatusOr<double> TimeReader(const std::string& reader, std::vector<std::string> args,
                                  const std::vector<std::pair<std::string, std::string>>& env) {
  SpawnOptions so;
  so.argv.push_back(reader);
  so.argv.insert(so.argv.end(), args.begin(), args.end());
  so.env = env;
  const absl::Time t = absl::Now();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> p, Subprocess::Spawn(so));
  while (p->ReadLine(absl::Seconds(60)).ok()) {
  }
  SLUICE_ASSIGN_OR_RETURN(int code, p->Wait());
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - t);
  if (code != 0) {
    return absl::InternalError(absl::StrCat("sluice-param-reader ", args[0], " exited ", code));
  }
  return ms;
}

// QUART's KeysManager: a forked child reads the parent's (private, copy-on-write) parameters.
double ForkCowMs(const char* data, size_t size) {
  const absl::Time t = absl::Now();
  const pid_t pid = fork();
  if (pid == 0) _exit(Checksum64(data, size) == 1 ? 1 : 0);
  int status = 0;
  waitpid(pid, &status, 0);
  return absl::ToDoubleMilliseconds(absl::Now() - t);
}

struct ReaderSetup {
  std::string reader;
  std::vector<std::pair<std::string, std::string>> env;  // emulated device, when found
  std::string device = "none";
  std::string emu_uuid;
};

absl::StatusOr<ReaderSetup> LocateReader(const CacheBenchOptions& o, int64_t bytes) {
  const std::string exe = ExecutableDir();
  ReaderSetup s;
  s.reader = FindProgramPath(o.reader, "SLUICE_PARAM_READER",
                             {SLUICE_BUILD_DIR "/bin/sluice-param-reader",
                              exe + "/sluice-param-reader"});
  if (s.reader.empty()) {
    return absl::NotFoundError("sluice-param-reader not found (build it, or set "
                               "SLUICE_PARAM_READER)");
  }
  const std::string emu = FindProgramPath(o.emulated_dir, "SLUICE_EMULATED_DIR",
                                          {SLUICE_BUILD_DIR "/emulated",
                                           exe + "/../lib/sluice-emulated"});
  if (!emu.empty() && access((emu + "/libcuda.so.1").c_str(), F_OK) == 0) {
    s.device = "emulated";
    s.emu_uuid = absl::StrCat("GPU-cache-bench-", getpid());
    s.env = {{"LD_LIBRARY_PATH", emu},
             {"SLUICE_EMU_UUID", s.emu_uuid},
             {"SLUICE_EMU_MEMORY_MB", std::to_string((bytes >> 20) * 2 + 1024)}};
  }
  return s;
}

}  // namespace

absl::StatusOr<CacheBenchResult> RunCacheBench(const CacheBenchOptions& o) {
  SLUICE_RETURN_IF_ERROR(ValidateSize(o.size_gib));
  if (o.repeat < 1) return absl::InvalidArgumentError("--repeat must be >= 1");
  CacheBenchResult r;
  r.bytes = static_cast<int64_t>(o.size_gib * kGiB);
  SLUICE_ASSIGN_OR_RETURN(ReaderSetup rs, LocateReader(o, r.bytes));
  r.device = rs.device;
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_gib_per_s, MemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_fresh_gib_per_s, FreshMemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(std::string path, WriteModelFile(o.dir, r.bytes));
  std::unique_ptr<ParamStore> store = BenchStore(r.bytes);
  LoadOptions lo;
  lo.threads = o.load_threads;
  std::vector<double> loads;
  for (int i = 0; i < o.repeat; ++i) {
    if (i > 0) (void)store->Evict("bench-model");
    absl::StatusOr<LoadResult> load = LoadFile(*store, "bench-model", path, lo);
    if (!load.ok()) {
      unlink(path.c_str());
      return load.status();
    }
    loads.push_back(load->gib_per_s());
  }
  r.load_gib_per_s = Median(loads);
  r.ratio = r.load_gib_per_s / r.memcpy_gib_per_s;
  const std::string sock = absl::StrCat(o.dir, "/sluice-cache-bench-", getpid(), ".sock");
  const std::string shm = absl::StrCat("sluice-cache-bench-", getpid());
  absl::Status status = [&]() -> absl::Status {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamFdServer> server,
                            ParamFdServer::Start(*store, sock));
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamLease> lease, store->Acquire("bench-model"));
    const int shm_fd = open(("/dev/shm/" + shm).c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (shm_fd < 0 || write(shm_fd, lease->data(), static_cast<size_t>(r.bytes)) != r.bytes) {
      return absl::ResourceExhaustedError("writing /dev/shm/" + shm);
    }
    close(shm_fd);
    Buffer heap(static_cast<size_t>(r.bytes));
    if (heap.p == nullptr) return absl::ResourceExhaustedError("heap copy");
    std::memcpy(heap.p, lease->data(), heap.n);
    const std::vector<std::string> from_cache = {"--socket", sock, "--model", "bench-model",
                                                 "--device", rs.device};
    std::vector<double> spawn, cache, disk, warm, scm, shm_ms, cow;
    for (int i = 0; i < o.repeat; ++i) {
      SLUICE_ASSIGN_OR_RETURN(double ms, TimeReader(rs.reader, {"--none"}, {}));
      spawn.push_back(ms);
      SLUICE_ASSIGN_OR_RETURN(ms, TimeReader(rs.reader, from_cache, rs.env));
      cache.push_back(ms);
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      r.disk_cache_dropped = fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
      if (fd >= 0) close(fd);
      SLUICE_ASSIGN_OR_RETURN(ms, TimeReader(rs.reader, {"--file", path, "--device", rs.device},
                                             rs.env));
      disk.push_back(ms);
      SLUICE_ASSIGN_OR_RETURN(ms, TimeReader(rs.reader, {"--file", path, "--device", rs.device},
                                             rs.env));
      warm.push_back(ms);
      SLUICE_ASSIGN_OR_RETURN(ms, TimeReader(rs.reader, {"--socket", sock, "--model",
                                                         "bench-model"}, {}));
      scm.push_back(ms);
      SLUICE_ASSIGN_OR_RETURN(ms, TimeReader(rs.reader, {"--shm", shm}, {}));
      shm_ms.push_back(ms);
      cow.push_back(ForkCowMs(heap.p, heap.n));
    }
    r.spawn_ms = Median(spawn);
    r.cold_start_ms_from_cache = Median(cache);
    r.cold_start_ms_from_disk = Median(disk);
    r.cold_start_ms_from_disk_warm = Median(warm);
    r.attach_ms_memfd_scm = Median(scm);
    r.attach_ms_shm_open = Median(shm_ms);
    r.attach_ms_fork_cow = Median(cow);
    return absl::OkStatus();
  }();
  unlink(path.c_str());
  unlink(("/dev/shm/" + shm).c_str());
  if (!rs.emu_uuid.empty()) shm_unlink(("/sluice-emu-" + rs.emu_uuid).c_str());
  if (!status.ok()) return status;
  return r;
}

}  // namespace sluice::runtime
