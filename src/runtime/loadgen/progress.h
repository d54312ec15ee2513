// The live line of `sluice load` on a terminal: requests sent, answered ok, errors and the p99
// latency so far. LoadProgress is filled by the runner (load_runner.h, LoadOptions::on_progress);
// FormatLoadProgress is pure. Thread-safe (values only).
#ifndef SLUICE_RUNTIME_LOADGEN_PROGRESS_H_
#define SLUICE_RUNTIME_LOADGEN_PROGRESS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/time/time.h"

namespace sluice::runtime {

struct LoadProgress {
  std::string function;
  absl::Duration elapsed;   // since the first request was due
  absl::Duration duration;  // the issuing window
  int64_t sent = 0;
  int64_t ok = 0;      // 2xx answers so far
  int64_t errors = 0;  // other answers, timeouts and transport failures so far
  std::optional<absl::Duration> p99;  // over the ok answers so far; none before the first
};

// "load classifier: 12.3/42.0 s  sent 1200  ok 1188  errors 2  p99 45.1 ms" ("p99 -" before the
// first ok answer).
std::string FormatLoadProgress(const LoadProgress& p);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_LOADGEN_PROGRESS_H_
