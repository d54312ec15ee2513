// Whole-file reading for simulator inputs (traces, profiles), transparently decompressing xz.
// Used by the workload sources and any src/sim module that loads data files. Thread-safe.
#ifndef SLUICE_SIM_WORKLOAD_FILE_IO_H_
#define SLUICE_SIM_WORKLOAD_FILE_IO_H_

#include <string>

#include "absl/status/statusor.h"

namespace sluice::sim {

// Returns the contents of `path`. If the file starts with the xz magic bytes it is decompressed
// (liblzma, concatenated streams allowed). If `path` does not exist but `path + ".xz"` does, that
// file is read instead (shared data keeps the original name plus `.xz`).
// Errors: NotFound when neither exists, PermissionDenied/Internal for other open or read
// failures, DataLoss for corrupt or truncated xz data; each message names the path.
absl::StatusOr<std::string> ReadFileMaybeXz(const std::string& path);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_FILE_IO_H_
