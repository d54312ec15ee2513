// Parsers for the workload input files: RPS series (one value per line), per-request CSV traces
// and Azure Functions 2019 per-minute invocation counts. They take file contents (the caller
// reads the file) and name `file` and the 1-based line in every error. Thread-safe: pure.
#ifndef SLUICE_SIM_WORKLOAD_TRACE_READERS_H_
#define SLUICE_SIM_WORKLOAD_TRACE_READERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::sim {

// One finite value >= 0 per line (line i = second i). Blank lines are allowed only at the end.
absl::StatusOr<std::vector<double>> ParseRpsSeries(absl::string_view contents,
                                                   const std::string& file);

struct TraceRequest {
  double at_s = 0;  // seconds after the earliest request of the trace
  int prompt_tokens = 0;
  int output_tokens = 0;
};

struct RequestTraceColumns {
  std::string timestamp = "TIMESTAMP";
  std::string prompt_tokens;  // empty = not read (tokens 0)
  std::string output_tokens;  // empty = not read (tokens 0)
};

// A CSV with a header row. The timestamp column holds either seconds (any real number) or
// `YYYY-mm-dd HH:MM:SS[.fffffff]` wall-clock time; the first data row decides which, and every
// row must use the same form. Rows are returned sorted by time (stable, so ties keep file order);
// out-of-order rows are accepted because row order carries no meaning beyond the timestamp.
// Token columns hold integers >= 0. Errors: a named column missing from the header, a row with
// too few fields, an unparsable value, a blank line before the end, no data rows.
absl::StatusOr<std::vector<TraceRequest>> ParseRequestTrace(absl::string_view contents,
                                                            const std::string& file,
                                                            const RequestTraceColumns& columns);

// Azure Functions 2019 `invocations_per_function_md.anon.dNN.csv`: header
// `HashOwner,HashApp,HashFunction,Trigger,1,...,1440`, then one row per function with integer
// counts per minute. The minute columns may be any contiguous range first..last with
// 1 <= first <= last <= kMaxAzureMinute (a slice such as 601..720, or several days' columns).
// Returns the counts of the first row whose HashFunction equals `function_hash` (empty = the
// first data row), indexed from minute 1: element m - 1 is minute m, minutes before `first` are
// 0, so a slice replays exactly as the same minutes of the full file. Only the header and the
// selected row are validated field by field; other rows are scanned for their HashFunction only.
absl::StatusOr<std::vector<double>> ParseAzureFunctionsRow(absl::string_view contents,
                                                           const std::string& file,
                                                           const std::string& function_hash);

inline constexpr int kAzureMinutesPerDay = 1440;
inline constexpr int kMaxAzureMinute = 14 * kAzureMinutesPerDay;  // the trace's two weeks

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_TRACE_READERS_H_
