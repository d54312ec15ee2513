// The measurements of one `sluice load` run and their summary: request outcomes, nearest-rank
// latency percentiles, SLO violation ratio (SVR), cold starts and a timeline of instance counts
// and SM shares sampled from the controller. Used by load_runner.cc and the CLI (text or JSON).
// Pure functions over values; thread-safe.
#ifndef SLUICE_RUNTIME_LOADGEN_REPORT_H_
#define SLUICE_RUNTIME_LOADGEN_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::runtime {

// The fate of one request.
struct Outcome {
  absl::Duration sent_at;  // offset from the start of the run
  absl::Duration latency;  // until the answer; for a request with no answer, until it was given up
  int status = 0;          // HTTP status of the answer; 0 when there was none
  std::string error;       // no answer: "timeout" (the run's deadline) or "unavailable" (transport)
};

struct LatencySummary {
  int64_t count = 0;  // answered 2xx requests the percentiles are over
  absl::Duration p50, p95, p99, max;
};

// Nearest-rank percentile of `values` (any order): the ceil(p / 100 * n)-th smallest, 1-based,
// for p in (0, 100]; ZeroDuration for an empty input.
absl::Duration Percentile(std::vector<absl::Duration> values, double p);

struct InstanceSample {
  int64_t id = 0;
  std::string state;
  double sm_share = 0.0;  // the token server's budget last period / the GPU's tokens per period
  double request = 0.0;
  double limit = 0.0;
};

struct FunctionSample {
  std::string name;
  std::string state;
  int64_t cold_starts = 0;
  std::vector<InstanceSample> instances;
};

struct TimelineSample {
  absl::Duration at;  // offset from the start of the run
  std::vector<FunctionSample> functions;
};

// Parses the controller's GET /admin/v1/functions body ({"functions": [FunctionStatus...]},
// docs/platform.md) into a sample taken at `at`. InvalidArgument when the body is not that shape.
absl::StatusOr<TimelineSample> ParseFunctionsSample(const std::string& body, absl::Duration at);

struct LoadReport {
  std::string function;
  absl::Duration duration;            // the issuing window (--seconds, capped by the trace)
  std::optional<absl::Duration> slo;  // the function's SLO; absent when it has none (training)
  int64_t sent = 0;
  int64_t ok = 0;                         // 2xx answers
  std::map<std::string, int64_t> errors;  // by HTTP status ("429") or "timeout"/"unavailable"
  LatencySummary latency;                 // over the ok requests
  int64_t violations = 0;                 // failed, or ok but slower than the SLO
  double svr = 0.0;                       // violations / sent (0 when nothing was sent)
  std::optional<int64_t> cold_starts;     // the controller's count during the run, when known
  std::vector<TimelineSample> timeline;
};

// Counts, percentiles and SVR of `outcomes`. A request violates the SLO when it did not get a
// 2xx answer, or when `slo` is set and its latency exceeds it.
LoadReport Summarize(const std::string& function, absl::Duration duration,
                     const std::vector<Outcome>& outcomes, std::optional<absl::Duration> slo);

// One JSON object: {"function", "seconds", "slo_ms", "sent", "ok", "errors", "latency_ms": {p50,
// p95, p99, max}, "violations", "svr", "cold_starts", "timeline": [{"t_s", "functions": [{"name",
// "state", "instances": [{"id", "state", "sm_share"}]}]}]}.
std::string ReportJson(const LoadReport& report);

// A human-readable summary followed by the timeline: one row per second of `at` with each
// instance's SM share averaged over that second's samples, printed only when a row differs from
// the one before (the first and last rows always). The JSON keeps every sample.
std::string ReportText(const LoadReport& report);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_LOADGEN_REPORT_H_
