// sluice-param-reader: the "instance" of `sluice node cache-bench`: obtains a model's parameters
// one way (--socket/--model: the store's memfd over SCM_RIGHTS; --shm: /dev/shm/<name>;
// --file: read(2) from disk; --none: nothing, the spawn baseline), then copies them to the device
// (--device emulated: cuMemcpyHtoD of whichever libcuda.so.1 the loader finds, e.g. the emulated
// driver; --device none: a checksum pass only) and prints one JSON line
// {"bytes", "checksum", "attach_ms", "copy_ms", "device"}. Exit 1 with a message on error.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/paramstore/checksum.h"
#include "runtime/paramstore/fd_server.h"

namespace {

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int Fail(const std::string& m) {
  std::fprintf(stderr, "sluice-param-reader: %s\n", m.c_str());
  return 1;
}

// cuInit .. cuMemcpyHtoD through dlopen, so this program needs no CUDA at build time.
bool CopyToDevice(const char* data, size_t size, std::string& error) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) {
    error = "libcuda.so.1 not found";
    return false;
  }
  using Init = int (*)(unsigned);
  using DevGet = int (*)(int*, int);
  using CtxCreate = int (*)(void**, unsigned, int);
  using Alloc = int (*)(unsigned long long*, size_t);
  using HtoD = int (*)(unsigned long long, const void*, size_t);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto dev_get = reinterpret_cast<DevGet>(dlsym(lib, "cuDeviceGet"));
  auto ctx_create = reinterpret_cast<CtxCreate>(dlsym(lib, "cuCtxCreate_v2"));
  auto alloc = reinterpret_cast<Alloc>(dlsym(lib, "cuMemAlloc_v2"));
  auto htod = reinterpret_cast<HtoD>(dlsym(lib, "cuMemcpyHtoD_v2"));
  int dev = 0;
  void* ctx = nullptr;
  unsigned long long dptr = 0;
  if (!init || !dev_get || !ctx_create || !alloc || !htod || init(0) != 0 ||
      dev_get(&dev, 0) != 0 || ctx_create(&ctx, 0, dev) != 0 || alloc(&dptr, size) != 0) {
    error = "CUDA driver setup failed";
    return false;
  }
  if (htod(dptr, data, size) != 0) {
    error = "cuMemcpyHtoD failed";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, model, shm, file, device = "none";
  bool none = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--socket") socket = next();
    else if (a == "--model") model = next();
    else if (a == "--shm") shm = next();
    else if (a == "--file") file = next();
    else if (a == "--device") device = next();
    else if (a == "--none") none = true;
    else return Fail("unknown flag " + a);
  }
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<sluice::runtime::ParamClient> client;
  const char* data = nullptr;
  size_t size = 0;
  std::vector<char> buffer;
  if (none) {
    std::printf("{\"bytes\": 0}\n");
    return 0;
  } else if (!socket.empty()) {
    auto c = sluice::runtime::ParamClient::Open(socket, model);
    if (!c.ok()) return Fail(std::string(c.status().message()));
    client = std::move(*c);
    data = client->data();
    size = static_cast<size_t>(client->size());
  } else if (!shm.empty() || !file.empty()) {
    const std::string path = shm.empty() ? file : "/dev/shm/" + shm;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return Fail("cannot open " + path);
    size = static_cast<size_t>(st.st_size);
    if (!shm.empty()) {
      void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) return Fail("mmap " + path);
      data = static_cast<const char*>(p);
    } else {
      buffer.resize(size);
      for (size_t off = 0; off < size;) {
        const ssize_t n = read(fd, buffer.data() + off, std::min<size_t>(size - off, 16 << 20));
        if (n <= 0) return Fail("read " + path);
        off += static_cast<size_t>(n);
      }
      data = buffer.data();
    }
    close(fd);
  } else {
    return Fail("one of --socket/--model, --shm, --file, --none is required");
  }
  const double attach_ms = MsSince(start);
  const auto copy_start = std::chrono::steady_clock::now();
  std::string error, used = device;
  if (device == "emulated" && !CopyToDevice(data, size, error)) return Fail(error);
  const uint64_t sum = sluice::runtime::Checksum64(data, size);  // touches every page
  std::printf("{\"bytes\": %zu, \"checksum\": %llu, \"attach_ms\": %.3f, \"copy_ms\": %.3f, "
              "\"device\": \"%s\"}\n",
              size, static_cast<unsigned long long>(sum), attach_ms, MsSince(copy_start),
              used.c_str());
  return 0;
}
