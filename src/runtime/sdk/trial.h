// Profiling-trial arithmetic shared by FunctionServer and RunTraining: the body of
// POST /sluice/v1/trial is parsed here and the answer summarised from measured iterations
// (docs/platform.md "Instance API"). Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_SDK_TRIAL_H_
#define SLUICE_RUNTIME_SDK_TRIAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {

inline constexpr int kMaxTrialBatch = 4096;
inline constexpr int kMaxTrialIterations = 10000;

struct TrialRequest {
  int batch = 1;       // requests per handler call (training: 1)
  int iterations = 1;  // handler calls (training: steps)
};

// Parses {"batch": b, "iterations": k}; both optional (default 1), integers in
// [1, kMaxTrialBatch] and [1, kMaxTrialIterations]. InvalidArgument naming the field.
absl::StatusOr<TrialRequest> ParseTrialRequest(const std::string& body);

struct TrialSummary {
  double latency_ms = 0;  // median of the iterations' latencies
  double throughput = 0;  // items per second at the median: batch / latency
  int64_t memory_bytes = 0;
};

// Median (the mean of the middle two for an even count) of `latencies`, which is non-empty.
absl::Duration MedianLatency(std::vector<absl::Duration> latencies);
TrialSummary SummarizeTrial(int batch, std::vector<absl::Duration> latencies, int64_t memory_bytes);
// {"latency_ms", "throughput", "memory_bytes", "batch", "iterations"}.
nlohmann::json TrialJson(const TrialSummary& s, const TrialRequest& r);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_TRIAL_H_
