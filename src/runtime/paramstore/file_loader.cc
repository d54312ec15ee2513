// Threads split the file into equal contiguous ranges (sequential per thread, so readahead and
// the SSD both see large sequential streams) and pread straight into the memfd mapping.
#include "runtime/paramstore/file_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {
namespace {

// Reads [begin, end) of `fd` into `dst + begin`. Returns false (and sets `error`) on a read
// error or a short file.
bool ReadRange(int fd, ParamWriter& w, int64_t begin, int64_t end, int64_t step,
               std::string& error) {
  char* dst = w.data();
  int64_t off = begin;
  while (off < end) {
    const size_t want = static_cast<size_t>(std::min(step, end - off));
    w.Prepare(off, static_cast<int64_t>(want));
    const ssize_t n = pread(fd, dst + off, want, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = absl::StrCat("read at offset ", off, ": ", std::strerror(errno));
      return false;
    }
    if (n == 0) {
      error = absl::StrCat("file ended at offset ", off, " (it shrank while loading)");
      return false;
    }
    off += n;
  }
  return true;
}

absl::Status ValidateOptions(const LoadOptions& o) {
  if (o.threads < 1 || o.threads > 64) {
    return absl::InvalidArgumentError("field 'threads': must be in [1, 64]");
  }
  if (o.read_bytes < 4096) return absl::InvalidArgumentError("field 'read_bytes': must be >= 4096");
  return absl::OkStatus();
}

}  // namespace

double LoadResult::gib_per_s() const {
  const double s = absl::ToDoubleSeconds(elapsed);
  return s > 0 ? static_cast<double>(bytes) / s / (1 << 30) : 0;
}

absl::StatusOr<LoadResult> LoadFile(ParamStore& store, const std::string& model,
                                    const std::string& path, const LoadOptions& options) {
  SLUICE_RETURN_IF_ERROR(ValidateOptions(options));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'path': cannot open '", path, "': ", std::strerror(errno)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("field 'path': '", path, "' is not a non-empty regular file"));
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<ParamWriter>> w =
      store.BeginPut(model, st.st_size, options.layer_bytes);
  if (!w.ok()) {
    close(fd);
    return w.status();
  }
  const int64_t size = st.st_size;
  const int n = static_cast<int>(std::min<int64_t>(options.threads,
                                                   std::max<int64_t>(1, size >> 20)));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  ParamWriter& writer = **w;
  for (int i = 0; i < n; ++i) {
    const int64_t begin = size * i / n, end = size * (i + 1) / n;
    threads.emplace_back([&, i, begin, end] {
      ReadRange(fd, writer, begin, end, options.read_bytes, errors[static_cast<size_t>(i)]);
    });
  }
  for (std::thread& t : threads) t.join();
  struct stat after {};
  const bool same_size = fstat(fd, &after) == 0 && after.st_size == size;
  close(fd);
  for (const std::string& e : errors) {
    if (!e.empty()) return absl::DataLossError(absl::StrCat("loading '", path, "': ", e));
  }
  if (!same_size) {
    return absl::DataLossError(absl::StrCat("loading '", path, "': the file changed size"));
  }
  SLUICE_RETURN_IF_ERROR((*w)->Commit());
  return LoadResult{size, absl::Now() - start};
}

}  // namespace sluice::runtime
