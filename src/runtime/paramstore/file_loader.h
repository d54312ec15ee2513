// LoadFile: reads a model file from disk into the parameter store with large sequential reads
// on several threads (ServerlessLLM's loader: each thread owns a contiguous range and reads it in
// big pread(2) calls straight into the store's segment, no staging buffer). Used by the agent's
// PUT /agent/v1/params/{model} and by `sluice node cache-bench` / `multicast-bench`.
// Thread safety: any thread; it starts and joins its own reader threads.
#ifndef SLUICE_RUNTIME_PARAMSTORE_FILE_LOADER_H_
#define SLUICE_RUNTIME_PARAMSTORE_FILE_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/paramstore/param_store.h"

namespace sluice::runtime {

struct LoadOptions {
  int threads = 4;                       // reader threads, 1-64
  int64_t read_bytes = int64_t{4} << 20;  // bytes per pread, >= 4096 (fits in cache)
  std::vector<int64_t> layer_bytes;      // optional split, must sum to the file size
};

struct LoadResult {
  int64_t bytes = 0;
  absl::Duration elapsed;  // BeginPut (allocation) to Commit, inclusive
  double gib_per_s() const;
};

// Loads `path` as `model`. InvalidArgument naming "path" for a missing, unreadable, empty or
// non-regular file, or a bad option; DataLoss when the file changed size while being read (the
// partial segment is dropped); BeginPut's errors otherwise. The model is servable only on OK.
absl::StatusOr<LoadResult> LoadFile(ParamStore& store, const std::string& model,
                                    const std::string& path, const LoadOptions& options = {});

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_FILE_LOADER_H_
