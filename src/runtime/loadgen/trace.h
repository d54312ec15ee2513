// Load traces for `sluice load` (src/runtime/cli) and the README demo: a CSV file of request
// times (`time_s`) or of per-second rates (`second,rps`), and the arrival schedule it implies.
// Pure functions over values (the caller reads the file); thread-safe.
#ifndef SLUICE_RUNTIME_LOADGEN_TRACE_H_
#define SLUICE_RUNTIME_LOADGEN_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::runtime {

// One row of a `second,rps` trace: `rps` requests per second (Poisson) during
// [second, second + 1) seconds from the start.
struct RateSecond {
  int64_t second = 0;  // >= 0, strictly increasing through the file
  double rps = 0.0;    // >= 0, finite
};

struct Trace {
  enum class Format { kTimes, kRates };
  Format format = Format::kTimes;
  std::vector<absl::Duration> times;  // kTimes: one request each, offsets from start, sorted
  std::vector<RateSecond> rates;      // kRates
};

// Parses a CSV trace. The first non-blank, non-'#' line is the header: `time_s` (one request
// per row: seconds from the start, >= 0, any order) or `second,rps`. Blank lines and lines
// starting with '#' are skipped. Errors are InvalidArgument "file:line:column: message" (1-based
// line; column of the offending field, 1-based).
absl::StatusOr<Trace> ParseTrace(const std::string& contents, const std::string& file);

// Reads `path` and parses it; NotFound naming the path when it cannot be read.
absl::StatusOr<Trace> LoadTrace(const std::string& path);

// The trace's length, the smallest window holding every request: 1 ms past the last request
// time (kTimes), or the last second + 1 (kRates).
absl::Duration TraceLength(const Trace& trace);

// Request offsets from the start, sorted, all < `limit`. kTimes: the trace's times. kRates: for
// each second a Poisson(rps) count of arrivals placed uniformly inside that second (a Poisson
// process of that rate), drawn from a generator seeded with `seed`: equal seeds, equal arrivals.
std::vector<absl::Duration> Arrivals(const Trace& trace, uint64_t seed, absl::Duration limit);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_LOADGEN_TRACE_H_
