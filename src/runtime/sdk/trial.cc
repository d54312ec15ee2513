#include "runtime/sdk/trial.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

absl::StatusOr<int> IntField(const nlohmann::json& body, const char* field, int max) {
  if (!body.contains(field)) {
    return 1;
  }
  const nlohmann::json& v = body[field];
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be an integer in [1, ", max, "]"));
  }
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

absl::StatusOr<TrialRequest> ParseTrialRequest(const std::string& body) {
  nlohmann::json j =
      body.empty() ? nlohmann::json::object() : nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("trial: body must be a JSON object");
  }
  TrialRequest r;
  SLUICE_ASSIGN_OR_RETURN(r.batch, IntField(j, "batch", kMaxTrialBatch));
  SLUICE_ASSIGN_OR_RETURN(r.iterations, IntField(j, "iterations", kMaxTrialIterations));
  return r;
}

absl::Duration MedianLatency(std::vector<absl::Duration> latencies) {
  SLUICE_CHECK(!latencies.empty());
  std::sort(latencies.begin(), latencies.end());
  const size_t n = latencies.size();
  if (n % 2 == 1) {
    return latencies[n / 2];
  }
  return (latencies[n / 2 - 1] + latencies[n / 2]) / 2;
}

TrialSummary SummarizeTrial(int batch, std::vector<absl::Duration> latencies,
                            int64_t memory_bytes) {
  TrialSummary s;
  const absl::Duration median = MedianLatency(std::move(latencies));
  s.latency_ms = absl::ToDoubleMilliseconds(median);
  // A zero median (a clock too coarse for a no-op) has no finite throughput; report 0 rather
  // than infinity, which JSON cannot carry.
  const double seconds = absl::ToDoubleSeconds(median);
  s.throughput = seconds > 0 ? batch / seconds : 0.0;
  s.memory_bytes = memory_bytes;
  return s;
}

nlohmann::json TrialJson(const TrialSummary& s, const TrialRequest& r) {
  return {{"latency_ms", s.latency_ms},
          {"throughput", s.throughput},
          {"memory_bytes", s.memory_bytes},
          {"batch", r.batch},
          {"iterations", r.iterations}};
}

}  // namespace sluice::runtime
