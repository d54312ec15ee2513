// Reads a file with stdio and, when it carries the xz magic, inflates it with liblzma.
#include "sim/workload/file_io.h"

#include <lzma.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sluice::sim {
namespace {

constexpr char kXzMagicBytes[] = {'\xFD', '7', 'z', 'X', 'Z', '\0'};
constexpr absl::string_view kXzMagic(kXzMagicBytes, sizeof(kXzMagicBytes));

absl::Status OpenError(const std::string& path, int err) {
  const std::string msg = absl::StrCat("cannot open '", path, "': ", std::strerror(err));
  if (err == ENOENT) {
    return absl::NotFoundError(msg);
  }
  if (err == EACCES) {
    return absl::PermissionDeniedError(msg);
  }
  return absl::InternalError(msg);
}

absl::StatusOr<std::string> ReadRaw(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is a directory, not a file"));
  }
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (f == nullptr) {
    return OpenError(path, errno);
  }
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) {
    out.append(buf, n);
  }
  if (std::ferror(f.get())) {
    return absl::InternalError(absl::StrCat("error reading '", path, "'"));
  }
  return out;
}

absl::StatusOr<std::string> Unxz(const std::string& path, const std::string& in) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
    return absl::InternalError("liblzma: cannot initialise the decoder");
  }
  std::unique_ptr<lzma_stream, void (*)(lzma_stream*)> guard(&strm, &lzma_end);
  std::string out;
  char buf[1 << 16];
  strm.next_in = reinterpret_cast<const uint8_t*>(in.data());
  strm.avail_in = in.size();
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {
    strm.next_out = reinterpret_cast<uint8_t*>(buf);
    strm.avail_out = sizeof(buf);
    // All input is present, so LZMA_FINISH from the start: the decoder reports truncation.
    ret = lzma_code(&strm, LZMA_FINISH);
    out.append(buf, sizeof(buf) - strm.avail_out);
  }
  if (ret != LZMA_STREAM_END) {
    return absl::DataLossError(
        absl::StrCat("'", path, "': corrupt or truncated xz data (liblzma code ", ret, ")"));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ReadFileMaybeXz(const std::string& path) {
  std::string actual = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && std::filesystem::exists(path + ".xz", ec)) {
    actual = path + ".xz";
  }
  absl::StatusOr<std::string> raw = ReadRaw(actual);
  if (!raw.ok()) {
    return raw.status();
  }
  if (absl::string_view(*raw).substr(0, kXzMagic.size()) != kXzMagic) {
    return raw;
  }
  return Unxz(actual, *raw);
}

}  // namespace sluice::sim
