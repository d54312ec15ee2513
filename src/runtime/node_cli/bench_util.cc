// Each memcpy figure is one thread: the copy a single loader, receiver or instance thread can do.
#include "runtime/node_cli/bench_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace sluice::runtime {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double SecondsSince(absl::Time since) { return absl::ToDoubleSeconds(absl::Now() - since); }

Buffer::Buffer(size_t bytes) : n(bytes) {
  void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  p = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
  if (p != nullptr) std::memset(p, 1, n);
}

Buffer::~Buffer() {
  if (p != nullptr) munmap(p, n);
}

absl::StatusOr<double> MemcpyGiBps(int64_t bytes) {
  Buffer a(static_cast<size_t>(bytes)), b(static_cast<size_t>(bytes));
  if (a.p == nullptr || b.p == nullptr) return absl::ResourceExhaustedError("memcpy buffers");
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    const absl::Time t = absl::Now();
    std::memcpy(b.p, a.p, a.n);
    best = std::max(best, static_cast<double>(bytes) / kGiB / SecondsSince(t));
  }
  return best;
}

absl::StatusOr<double> FreshMemcpyGiBps(int64_t bytes) {
  Buffer a(static_cast<size_t>(bytes));
  if (a.p == nullptr) return absl::ResourceExhaustedError("memcpy buffer");
  void* m = mmap(nullptr, a.n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return absl::ResourceExhaustedError("memcpy buffer");
  const absl::Time t = absl::Now();
  std::memcpy(m, a.p, a.n);
  const double gibps = static_cast<double>(bytes) / kGiB / SecondsSince(t);
  munmap(m, a.n);
  return gibps;
}

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

absl::Status ValidateSize(double size_gib) {
  if (!(size_gib > 0 && size_gib <= 16)) {
    return absl::InvalidArgumentError("--size-gib must be in (0, 16]");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ParamStore>> BenchStore(int64_t bytes, Pretouch pretouch,
                                                       bool huge_pages, double& pretouch_s) {
  ParamStoreOptions o;
  o.capacity_bytes = static_cast<int64_t>(static_cast<double>(bytes) / 0.85) + (int64_t{64} << 20);
  o.pretouch = pretouch;
  o.huge_pages = huge_pages;
  const absl::Time t = absl::Now();
  absl::StatusOr<std::unique_ptr<ParamStore>> s = ParamStore::Create(o);
  pretouch_s = SecondsSince(t);
  return s;
}

}  // namespace sluice::runtime
