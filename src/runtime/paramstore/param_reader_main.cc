// sluice-param-reader: the "instance" of `sluice node cache-bench`. It gets a model's parameters
// one way and copies them into device memory (--device emulated: cuMemcpyHtoD of whichever
// libcuda.so.1 the loader finds, e.g. the emulated driver; --device none: memcpy into a host
// buffer standing in for it). Device memory (--device-bytes) is allocated and written once
// before anything is timed, as a GPU's memory exists before a process uses it (the emulated
// device's memory is fresh host memory, whose first touch this VM makes slow).
//   one shot: --socket S --model M [--map] | --file F [--direct] | --shm NAME | --none
//     (the store's chunks over SCM_RIGHTS, pread block by block, or with --map mapped and read
//     whole; read(2) of a file, O_DIRECT with --direct; a /dev/shm mapping; nothing), prints
//     one JSON line and exits.
//   --serve FIFO: a pre-started runtime process (issue 13's pool): sets the device up, prints
//     {"ready": ...}, then runs the commands written to FIFO, one JSON line each: "cache S M"
//     (the chunk fds, pread block by block into a staging buffer, each block copied), "map S M"
//     (get, map and touch once: a standby), "copy" (the standby's copy), "release", "file F"
//     (O_DIRECT read into the staging buffer, copied block by block).
// JSON fields: bytes, checksum, attach_ms, copy_ms, device_setup_ms, device. Exit 1 on error.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "runtime/paramstore/checksum.h"
#include "runtime/paramstore/fd_server.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kBlock = size_t{16} << 20;  // file reads and their device copies

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Warm anonymous memory (written once), or nullptr.
char* WarmBuffer(size_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memset(p, 0, n);
  return static_cast<char*>(p);
}

// Device memory through the driver API (dlopen: no CUDA at build time), or a warm host buffer.
class Device {
 public:
  bool Setup(const std::string& kind, size_t bytes, std::string& error) {
    kind_ = kind;
    bytes_ = bytes;
    if (kind == "none") {
      host_ = WarmBuffer(bytes);
      if (host_ == nullptr) error = "host buffer";
      return host_ != nullptr;
    }
    if (kind != "emulated") {
      error = "--device must be emulated or none";
      return false;
    }
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) {
      error = "libcuda.so.1 not found";
      return false;
    }
    using Init = int (*)(unsigned);
    using DevGet = int (*)(int*, int);
    using CtxCreate = int (*)(void**, unsigned, int);
    using Alloc = int (*)(unsigned long long*, size_t);
    using Set = int (*)(unsigned long long, unsigned char, size_t);
    auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
    auto dev_get = reinterpret_cast<DevGet>(dlsym(lib, "cuDeviceGet"));
    auto ctx_create = reinterpret_cast<CtxCreate>(dlsym(lib, "cuCtxCreate_v2"));
    auto alloc = reinterpret_cast<Alloc>(dlsym(lib, "cuMemAlloc_v2"));
    auto set = reinterpret_cast<Set>(dlsym(lib, "cuMemsetD8_v2"));
    htod_ = reinterpret_cast<HtoD>(dlsym(lib, "cuMemcpyHtoD_v2"));
    int dev = 0;
    void* ctx = nullptr;
    if (!init || !dev_get || !ctx_create || !alloc || !set || !htod_ || init(0) != 0 ||
        dev_get(&dev, 0) != 0 || ctx_create(&ctx, 0, dev) != 0 || alloc(&dptr_, bytes) != 0 ||
        set(dptr_, 0, bytes) != 0) {
      error = "CUDA driver setup failed";
      return false;
    }
    return true;
  }
  // Copies `n` bytes to device offset `off`.
  bool Copy(size_t off, const char* src, size_t n) {
    if (off + n > bytes_) return false;
    if (kind_ == "none") {
      std::memcpy(host_ + off, src, n);
      return true;
    }
    return htod_(dptr_ + off, src, n) == 0;
  }
  const std::string& kind() const { return kind_; }

 private:
  using HtoD = int (*)(unsigned long long, const void*, size_t);
  std::string kind_;
  size_t bytes_ = 0;
  char* host_ = nullptr;
  unsigned long long dptr_ = 0;
  HtoD htod_ = nullptr;
};

struct Result {
  size_t bytes = 0;
  uint64_t checksum = 0;
  double attach_ms = 0, copy_ms = 0;
};

void Print(const Result& r, const Device& d, double setup_ms) {
  std::printf("{\"bytes\": %zu, \"checksum\": %llu, \"attach_ms\": %.3f, \"copy_ms\": %.3f, "
              "\"device_setup_ms\": %.3f, \"device\": \"%s\"}\n",
              r.bytes, static_cast<unsigned long long>(r.checksum), r.attach_ms, r.copy_ms,
              setup_ms, d.kind().c_str());
  std::fflush(stdout);
}

int Fail(const std::string& m) {
  std::fprintf(stderr, "sluice-param-reader: %s\n", m.c_str());
  std::printf("{\"error\": \"%s\"}\n", m.c_str());
  std::fflush(stdout);
  return 1;
}

// Reads `path` block by block into `staging` (kBlock, 4 KiB aligned) and copies each block to
// the device: the disk path of a cold start. O_DIRECT keeps the page cache out of it.
bool FromFile(const std::string& path, bool direct, char* staging, Device& d, Result& r,
              std::string& error) {
  const auto t = Clock::now();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    error = "cannot open " + path;
    return false;
  }
  r.bytes = static_cast<size_t>(st.st_size);
  double copy_ms = 0;
  for (size_t off = 0; off < r.bytes;) {
    const ssize_t n = read(fd, staging, kBlock);
    if (n <= 0) {
      close(fd);
      error = "read " + path;
      return false;
    }
    const auto c = Clock::now();
    if (!d.Copy(off, staging, static_cast<size_t>(n))) {
      close(fd);
      error = "device copy failed";
      return false;
    }
    copy_ms += MsSince(c);
    off += static_cast<size_t>(n);
  }
  close(fd);
  r.copy_ms = copy_ms;
  r.attach_ms = MsSince(t) - copy_ms;  // the reads
  return true;
}

// The store's segment: fds over the agent's socket, mapped and then touched once (a standby:
// on a shadow-paging VM, mapping alone leaves every first access to trap).
absl::StatusOr<std::unique_ptr<sluice::runtime::ParamClient>> Attach(const std::string& socket,
                                                                     const std::string& model,
                                                                     bool touch, Result& r) {
  const auto t = Clock::now();
  auto c = sluice::runtime::ParamClient::Open(socket, model, touch);
  if (c.ok()) {
    r.bytes = static_cast<size_t>((*c)->size());
    if (touch) r.checksum = sluice::runtime::Checksum64((*c)->data(), r.bytes);
  }
  r.attach_ms = MsSince(t);
  return c;
}

// The cache path of a cold start: the store's chunk fds (no mapping), each block pread(2) into
// the staging buffer and copied to the device, as a loader does through a pinned buffer.
bool FromCache(const std::string& socket, const std::string& model, char* staging, Device& d,
               Result& r, std::string& error) {
  const auto t = Clock::now();
  auto c = sluice::runtime::ParamClient::OpenFds(socket, model);
  if (!c.ok()) {
    error = std::string(c.status().message());
    return false;
  }
  r.bytes = static_cast<size_t>((*c)->size());
  const size_t chunk = static_cast<size_t>((*c)->chunk_bytes());
  double copy_ms = 0;
  for (size_t off = 0; off < r.bytes;) {
    const size_t in = off % chunk;
    const size_t want = std::min({kBlock, chunk - in, r.bytes - off});
    const ssize_t n = pread((*c)->fds()[off / chunk], staging, want, static_cast<off_t>(in));
    if (n <= 0) {
      error = "pread of a parameter chunk failed";
      return false;
    }
    const auto cp = Clock::now();
    if (!d.Copy(off, staging, static_cast<size_t>(n))) {
      error = "device copy failed";
      return false;
    }
    copy_ms += MsSince(cp);
    off += static_cast<size_t>(n);
  }
  r.copy_ms = copy_ms;
  r.attach_ms = MsSince(t) - copy_ms;  // the socket and the reads
  return true;
}

bool CopyAll(const char* data, size_t n, Device& d, Result& r) {
  const auto t = Clock::now();
  const bool ok = d.Copy(0, data, n);
  r.copy_ms = MsSince(t);
  return ok;
}

// The --serve loop: one command per line of `commands`.
int Serve(const std::string& commands, Device& d, double setup_ms) {
  char* staging = WarmBuffer(kBlock);
  if (staging == nullptr) return Fail("staging buffer");
  std::printf("{\"ready\": true, \"device_setup_ms\": %.3f}\n", setup_ms);
  std::fflush(stdout);
  std::unique_ptr<sluice::runtime::ParamClient> standby;
  std::ifstream in_file(commands);  // blocks until the bench opens the FIFO's write end
  if (!in_file) return Fail("cannot open " + commands);
  std::string line;
  while (std::getline(in_file, line)) {
    std::istringstream in(line);
    std::string cmd, a, b;
    in >> cmd >> a >> b;
    Result r;
    std::string error;
    if (cmd == "cache") {
      FromCache(a, b, staging, d, r, error);
    } else if (cmd == "map") {
      auto c = Attach(a, b, true, r);
      if (!c.ok()) {
        Fail(std::string(c.status().message()));
        continue;
      }
      standby = std::move(*c);
    } else if (cmd == "copy" && standby != nullptr) {
      r.bytes = static_cast<size_t>(standby->size());
      if (!CopyAll(standby->data(), r.bytes, d, r)) error = "device copy failed";
    } else if (cmd == "release") {
      standby.reset();
    } else if (cmd == "file") {
      FromFile(a, true, staging, d, r, error);
    } else {
      error = "unknown command '" + line + "'";
    }
    if (!error.empty()) {
      Fail(error);
      continue;
    }
    Print(r, d, setup_ms);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, model, shm, file, device = "none", serve;
  size_t device_bytes = 0;
  bool none = false, populate = false, direct = false;  // populate: --map
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--socket") socket = next();
    else if (a == "--model") model = next();
    else if (a == "--shm") shm = next();
    else if (a == "--file") file = next();
    else if (a == "--device") device = next();
    else if (a == "--device-bytes") device_bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--none") none = true;
    else if (a == "--serve") serve = next();
    else if (a == "--map") populate = true;
    else if (a == "--direct") direct = true;
    else return Fail("unknown flag " + a);
  }
  if (none) {
    std::printf("{\"bytes\": 0}\n");
    return 0;
  }
  const auto setup_start = Clock::now();
  Device d;
  std::string error;
  if (device_bytes == 0) return Fail("--device-bytes is required");
  if (!d.Setup(device, device_bytes, error)) return Fail(error);
  const double setup_ms = MsSince(setup_start);
  if (!serve.empty()) return Serve(serve, d, setup_ms);
  Result r;
  std::unique_ptr<sluice::runtime::ParamClient> client;
  const char* data = nullptr;
  if (!socket.empty() && populate) {  // --map: map and touch, then copy from the mapping
    auto c = Attach(socket, model, true, r);
    if (!c.ok()) return Fail(std::string(c.status().message()));
    client = std::move(*c);
    data = client->data();
  } else if (!shm.empty()) {
    const auto t = Clock::now();
    const int fd = open(("/dev/shm/" + shm).c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return Fail("cannot open /dev/shm/" + shm);
    r.bytes = static_cast<size_t>(st.st_size);
    void* p = mmap(nullptr, r.bytes, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return Fail("mmap /dev/shm/" + shm);
    data = static_cast<const char*>(p);
    r.attach_ms = MsSince(t);
  } else if (!file.empty() || (!socket.empty() && !populate)) {
    // A one-shot process has no warm staging buffer: allocating it is part of its start.
    void* staging = nullptr;
    if (posix_memalign(&staging, 4096, kBlock) != 0) return Fail("staging buffer");
    const bool ok = file.empty()
                        ? FromCache(socket, model, static_cast<char*>(staging), d, r, error)
                        : FromFile(file, direct, static_cast<char*>(staging), d, r, error);
    if (!ok) return Fail(error);
    Print(r, d, setup_ms);
    return 0;
  } else {
    return Fail("one of --socket/--model, --shm, --file, --none, --serve is required");
  }
  if (!CopyAll(data, r.bytes, d, r)) return Fail("device copy failed");
  r.checksum = sluice::runtime::Checksum64(data, std::min<size_t>(r.bytes, 1 << 20));
  Print(r, d, setup_ms);
  return 0;
}
