// FunctionRecord: one function in the controller's registry as persisted in the Store under
// "functions/<name>" (JSON holding the spec as YAML, the state, the profile and the scale
// overrides), and its (de)serialisation. Used by the controller daemon. Thread-safe: values.
#ifndef SLUICE_RUNTIME_CONTROLLER_FUNCTION_RECORD_H_
#define SLUICE_RUNTIME_CONTROLLER_FUNCTION_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "nlohmann/json.hpp"
#include "runtime/controller/function_state.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {

// One profiling trial: latency of one batch at an SM share (time quota 1). Kept so the
// controller can give policies a latency model of (batch, s, q) (profiled_latency.h).
struct TrialPoint {
  int batch = 1;
  double sm_share = 1;
  double latency_ms = 0;
  bool operator==(const TrialPoint&) const = default;
};

// What profiling found (or the spec preset): the instance's SM quota, batch and capacity.
struct ProfileInfo {
  double request = 0;        // SM request fraction, (0, 1]
  double limit = 0;          // SM limit fraction, [request, 1]
  int batch = 1;             // profiled batch, capped by batching.max_batch
  double capacity_rps = 0;   // requests/s of one instance (training: iterations/s)
  double latency_ms = 0;     // t_exec of one batch at the request quota
  int64_t memory_bytes = 0;  // peak GPU memory seen in the trials (0: unknown)
  int trials = 0;            // distinct trials run
  std::string source;        // "profiled" or "spec"
  double time_quota = 1;     // the spec's quota.time_quota (profiling itself runs at 1)
  std::vector<TrialPoint> points;  // every distinct trial, in the order run
  bool operator==(const ProfileInfo&) const = default;
};

struct FunctionRecord {
  FunctionSpec spec;
  FunctionState state = FunctionState::kProfiling;
  std::string message;                 // why it failed; empty otherwise
  std::optional<ProfileInfo> profile;  // set once ready
  std::optional<int> min_override;     // PUT /scale, else spec.autoscaling.min
  std::optional<int> max_override;     // PUT /scale, else spec.autoscaling.max
  int64_t cold_starts = 0;             // starts from zero instances (wake or load)
  int64_t profiling_instance = 0;      // agent instance id of a running trial; 0: none
  bool training_launched = false;      // training workers were started once
  bool operator==(const FunctionRecord&) const = default;

  int min() const { return min_override.value_or(spec.autoscaling.min); }
  int max() const { return max_override.value_or(spec.autoscaling.max); }
};

// The Store key of a function: "functions/<name>".
std::string FunctionKey(const std::string& name);
inline constexpr char kFunctionKeyPrefix[] = "functions/";

// The profile as FunctionStatus shows it (without the trial points).
nlohmann::json ProfileToJson(const ProfileInfo& profile);

// Serialises `record` for the Store. RecordFromJson(RecordToJson(r)) == r.
std::string RecordToJson(const FunctionRecord& record);
// Parses a stored record. DataLoss naming `key` and the problem for malformed JSON, an unknown
// state or a spec the parser rejects.
absl::StatusOr<FunctionRecord> RecordFromJson(const std::string& key, const std::string& text);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_FUNCTION_RECORD_H_
