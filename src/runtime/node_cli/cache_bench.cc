// `sluice node cache-bench` (param_bench.h): the store's arena, its fill from disk, and cold
// starts of sluice-param-reader (the instance) from the store vs from disk, pre-started (one
// reader kept running, commands over a FIFO) and spawned per start. Each figure is the median
// of `repeat` runs. docs/parameter-store.md defines every field.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/common/program_path.h"
#include "runtime/common/subprocess.h"
#include "runtime/node_cli/bench_util.h"
#include "runtime/node_cli/param_bench.h"
#include "runtime/paramstore/checksum.h"
#include "runtime/paramstore/fd_server.h"
#include "runtime/paramstore/file_loader.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;
constexpr char kModel[] = "bench-model";

struct ReaderSetup {
  std::string reader;
  std::vector<std::pair<std::string, std::string>> env;  // the emulated device, when used
  std::string device = "none";
  std::string note;
  std::string emu_uuid;
  int64_t device_bytes = 0;
};

absl::StatusOr<ReaderSetup> LocateReader(const CacheBenchOptions& o, int64_t bytes) {
  if (o.device != "auto" && o.device != "emulated" && o.device != "none") {
    return absl::InvalidArgumentError("--device must be auto, emulated or none");
  }
  const std::string exe = ExecutableDir();
  ReaderSetup s;
  s.device_bytes = bytes;
  s.reader = FindProgramPath(o.reader, "SLUICE_PARAM_READER",
                             {SLUICE_BUILD_DIR "/bin/sluice-param-reader",
                              exe + "/sluice-param-reader"});
  if (s.reader.empty()) {
    return absl::NotFoundError("sluice-param-reader not found (build it, or set "
                               "SLUICE_PARAM_READER)");
  }
  if (o.device == "none") {
    s.note = "--device none";
    return s;
  }
  const std::string emu = FindProgramPath(o.emulated_dir, "SLUICE_EMULATED_DIR",
                                          {SLUICE_BUILD_DIR "/emulated",
                                           exe + "/../lib/sluice-emulated"});
  if (emu.empty() || access((emu + "/libcuda.so.1").c_str(), F_OK) != 0) {
    s.note = absl::StrCat("no emulated libcuda.so.1 (looked in '",
                          emu.empty() ? SLUICE_BUILD_DIR "/emulated" : emu,
                          "'; build target sluice_intercept_emulated or set SLUICE_EMULATED_DIR)");
    if (o.device == "emulated") return absl::NotFoundError(s.note);
    return s;
  }
  s.device = "emulated";
  s.emu_uuid = absl::StrCat("GPU-cache-bench-", getpid());
  s.env = {{"LD_LIBRARY_PATH", emu},
           {"SLUICE_EMU_UUID", s.emu_uuid},
           {"SLUICE_EMU_MEMORY_MB", std::to_string((bytes >> 20) * 2 + 1024)}};
  return s;
}

std::vector<std::string> ReaderArgs(const ReaderSetup& rs, std::vector<std::string> more) {
  std::vector<std::string> a = {rs.reader, "--device", rs.device, "--device-bytes",
                                std::to_string(rs.device_bytes)};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// Runs a one-shot reader; its JSON line and the wall time from spawn to exit (ms).
absl::StatusOr<Json> RunReader(const ReaderSetup& rs, std::vector<std::string> args, bool device,
                               double& wall_ms) {
  SpawnOptions so;
  so.argv = device ? ReaderArgs(rs, std::move(args)) : std::vector<std::string>{rs.reader};
  if (!device) so.argv.insert(so.argv.end(), args.begin(), args.end());
  so.env = rs.env;
  const absl::Time t = absl::Now();
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> p, Subprocess::Spawn(so));
  std::string last;
  for (absl::StatusOr<std::string> l = p->ReadLine(absl::Seconds(300)); l.ok();
       l = p->ReadLine(absl::Seconds(300))) {
    last = *l;
  }
  SLUICE_ASSIGN_OR_RETURN(int code, p->Wait());
  wall_ms = absl::ToDoubleMilliseconds(absl::Now() - t);
  if (code != 0) return absl::InternalError("sluice-param-reader failed: " + last);
  Json j = Json::parse(last, nullptr, false);
  if (j.is_discarded()) return absl::InternalError("sluice-param-reader printed: " + last);
  return j;
}

// A pre-started reader (--serve): commands go through a FIFO, answers come on its stdout.
class PooledReader {
 public:
  static absl::StatusOr<std::unique_ptr<PooledReader>> Start(const ReaderSetup& rs,
                                                             const std::string& fifo) {
    unlink(fifo.c_str());
    if (mkfifo(fifo.c_str(), 0600) != 0) return absl::InternalError("mkfifo " + fifo);
    SpawnOptions so;
    so.argv = ReaderArgs(rs, {"--serve", fifo});
    so.env = rs.env;
    std::unique_ptr<PooledReader> r(new PooledReader(fifo));
    SLUICE_ASSIGN_OR_RETURN(r->proc_, Subprocess::Spawn(so));
    r->fd_ = open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // waits for the reader to open it
    if (r->fd_ < 0) return absl::InternalError("open " + fifo);
    SLUICE_ASSIGN_OR_RETURN(std::string ready, r->proc_->ReadLine(absl::Seconds(300)));
    if (ready.find("\"ready\"") == std::string::npos) {
      return absl::InternalError("sluice-param-reader --serve: " + ready);
    }
    return r;
  }
  ~PooledReader() {
    if (fd_ >= 0) close(fd_);  // EOF: the reader exits
    if (proc_ != nullptr) (void)proc_->Wait();
    unlink(fifo_.c_str());
  }
  // One command; its JSON answer and the wall time from sending it to the answer (ms).
  absl::StatusOr<Json> Run(const std::string& command, double& wall_ms) {
    const std::string line = command + "\n";
    const absl::Time t = absl::Now();
    if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      return absl::InternalError("writing to the pooled reader");
    }
    SLUICE_ASSIGN_OR_RETURN(std::string out, proc_->ReadLine(absl::Seconds(300)));
    wall_ms = absl::ToDoubleMilliseconds(absl::Now() - t);
    Json j = Json::parse(out, nullptr, false);
    if (j.is_discarded() || j.contains("error")) {
      return absl::InternalError("pooled reader: " + out);
    }
    return j;
  }

 private:
  explicit PooledReader(std::string fifo) : fifo_(std::move(fifo)) {}
  std::string fifo_;
  std::unique_ptr<Subprocess> proc_;
  int fd_ = -1;
};

bool DropPageCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  if (fd >= 0) close(fd);
  return ok;
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

struct Runs {
  std::vector<double> load, load_attach, cache, disk, cache_spawned, disk_spawned, spawn, setup,
      scm, shm, cow;
};

// The pre-started instance: a standby (map populated, then copy), a cold start from the cache
// (fds + map + copy) and one from disk (O_DIRECT + copy).
absl::Status PooledRound(PooledReader& p, const std::string& sock, const std::string& path,
                         int64_t bytes, Runs& runs) {
  double ms = 0;
  SLUICE_ASSIGN_OR_RETURN(Json map, p.Run(absl::StrCat("map ", sock, " ", kModel), ms));
  SLUICE_ASSIGN_OR_RETURN(Json copy, p.Run("copy", ms));
  runs.load.push_back(static_cast<double>(bytes) / kGiB / (copy["copy_ms"].get<double>() / 1e3));
  SLUICE_RETURN_IF_ERROR(p.Run("release", ms).status());
  SLUICE_ASSIGN_OR_RETURN(Json c, p.Run(absl::StrCat("cache ", sock, " ", kModel), ms));
  runs.cache.push_back(ms);
  runs.load_attach.push_back(static_cast<double>(bytes) / kGiB /
                             ((c["attach_ms"].get<double>() + c["copy_ms"].get<double>()) / 1e3));
  DropPageCache(path);
  SLUICE_RETURN_IF_ERROR(p.Run("file " + path, ms).status());
  runs.disk.push_back(ms);
  return absl::OkStatus();
}

// Fresh processes: spawn only, from the cache, from disk (page cache dropped, O_DIRECT).
absl::Status SpawnedRound(const ReaderSetup& rs, const std::string& sock,
                          const std::string& path, Runs& runs) {
  double ms = 0;
  SLUICE_RETURN_IF_ERROR(RunReader(rs, {"--none"}, false, ms).status());
  runs.spawn.push_back(ms);
  SLUICE_ASSIGN_OR_RETURN(Json c, RunReader(rs, {"--socket", sock, "--model", kModel}, true, ms));
  runs.cache_spawned.push_back(ms);
  runs.setup.push_back(c["device_setup_ms"].get<double>());
  DropPageCache(path);
  SLUICE_RETURN_IF_ERROR(RunReader(rs, {"--file", path, "--direct"}, true, ms).status());
  runs.disk_spawned.push_back(ms);
  return absl::OkStatus();
}

// A new process reading every page three ways: the store's fds, /dev/shm, a forked child.
absl::Status AttachRound(const ReaderSetup& rs, const std::string& sock, const std::string& shm,
                         const Buffer& heap, Runs& runs) {
  ReaderSetup none = rs;
  none.device = "none";
  none.env.clear();
  double ms = 0;
  SLUICE_RETURN_IF_ERROR(
      RunReader(none, {"--socket", sock, "--model", kModel, "--map"}, true, ms).status());
  runs.scm.push_back(ms);
  SLUICE_RETURN_IF_ERROR(RunReader(none, {"--shm", shm}, true, ms).status());
  runs.shm.push_back(ms);
  runs.cow.push_back(ForkCowMs(heap.p, heap.n));
  return absl::OkStatus();
}

absl::Status WriteShm(const std::string& shm, const ParamLease& lease) {
  const int fd = open(("/dev/shm/" + shm).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const bool ok = fd >= 0 && write(fd, lease.data(), static_cast<size_t>(lease.size())) ==
                                 static_cast<ssize_t>(lease.size());
  if (fd >= 0) close(fd);
  return ok ? absl::OkStatus() : absl::ResourceExhaustedError("writing /dev/shm/" + shm);
}

absl::Status TimeStarts(const CacheBenchOptions& o, const ReaderSetup& rs, ParamStore& store,
                        const std::string& path, CacheBenchResult& r) {
  const std::string base = absl::StrCat(o.dir, "/sluice-cache-bench-", getpid());
  const std::string shm = absl::StrCat("sluice-cache-bench-", getpid());
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamFdServer> server,
                          ParamFdServer::Start(store, base + ".sock"));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamLease> lease, store.Acquire(kModel));
  Runs runs;
  {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<PooledReader> pool,
                            PooledReader::Start(rs, base + ".fifo"));
    for (int i = 0; i < o.repeat; ++i) {
      SLUICE_RETURN_IF_ERROR(PooledRound(*pool, base + ".sock", path, r.bytes, runs));
    }
  }
  for (int i = 0; i < o.repeat; ++i) {
    SLUICE_RETURN_IF_ERROR(SpawnedRound(rs, base + ".sock", path, runs));
  }
  if (o.attach_comparison) {
    absl::Status s = WriteShm(shm, *lease);
    Buffer heap(static_cast<size_t>(r.bytes));
    if (s.ok() && heap.p == nullptr) s = absl::ResourceExhaustedError("heap copy");
    if (s.ok()) std::memcpy(heap.p, lease->data(), heap.n);
    for (int i = 0; s.ok() && i < o.repeat; ++i) s = AttachRound(rs, base + ".sock", shm, heap, runs);
    unlink(("/dev/shm/" + shm).c_str());
    SLUICE_RETURN_IF_ERROR(s);
  }
  r.load_gib_per_s = Median(runs.load);
  r.load_with_attach_gib_per_s = Median(runs.load_attach);
  r.cold_start_ms_from_cache = Median(runs.cache);
  r.cold_start_ms_from_disk = Median(runs.disk_spawned);
  r.cold_start_ms_from_disk_prestarted = Median(runs.disk);
  r.cold_start_ms_from_cache_spawned = Median(runs.cache_spawned);
  r.cold_start_ms_from_disk_spawned = Median(runs.disk_spawned);
  r.spawn_ms = Median(runs.spawn);
  r.device_setup_ms = Median(runs.setup);
  r.attach_ms_memfd_scm = Median(runs.scm);
  r.attach_ms_shm_open = Median(runs.shm);
  r.attach_ms_fork_cow = Median(runs.cow);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CacheBenchResult> RunCacheBench(const CacheBenchOptions& o) {
  SLUICE_RETURN_IF_ERROR(ValidateSize(o.size_gib));
  if (o.repeat < 1) return absl::InvalidArgumentError("--repeat must be >= 1");
  CacheBenchResult r;
  r.bytes = static_cast<int64_t>(o.size_gib * kGiB) / 4096 * 4096;  // O_DIRECT reads whole pages
  if (r.bytes <= 0) return absl::InvalidArgumentError("--size-gib is below one page");
  SLUICE_ASSIGN_OR_RETURN(ReaderSetup rs, LocateReader(o, r.bytes));
  r.device = rs.device;
  r.device_note = rs.note;
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_gib_per_s, MemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(r.memcpy_fresh_gib_per_s, FreshMemcpyGiBps(r.bytes));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<ParamStore> store,
                          BenchStore(r.bytes, o.pretouch, o.huge_pages, r.arena_pretouch_s));
  r.huge_pages = store->arena().huge_pages();
  r.huge_pages_note = store->arena().huge_pages_note();
  SLUICE_ASSIGN_OR_RETURN(std::string path, WriteModelFile(o.dir, r.bytes));
  LoadOptions lo;
  lo.threads = o.load_threads;
  std::vector<double> fills;
  absl::Status status;
  for (int i = 0; status.ok() && i < o.repeat; ++i) {
    if (i > 0) (void)store->Evict(kModel);
    absl::StatusOr<LoadResult> load = LoadFile(*store, kModel, path, lo);
    if (load.ok()) fills.push_back(load->gib_per_s());
    status = load.status();
  }
  r.store_fill_gib_per_s = Median(fills);
  if (status.ok()) status = TimeStarts(o, rs, *store, path, r);
  r.ratio = r.load_gib_per_s / r.memcpy_gib_per_s;
  unlink(path.c_str());
  if (!rs.emu_uuid.empty()) shm_unlink(("/sluice-emu-" + rs.emu_uuid).c_str());
  if (!status.ok()) return status;
  return r;
}

}  // namespace sluice::runtime
