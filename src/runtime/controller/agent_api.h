// The node agent's API as the controller sees it (docs/platform.md, "Agent API"): parsed
// GET /agent/v1/node answers and the JSON bodies the controller sends (StartInstance, quota), plus
// the instance's trial answer. Used by the controller daemon and its trial runner. Thread-safe:
// pure functions over values.
#ifndef SLUICE_RUNTIME_CONTROLLER_AGENT_API_H_
#define SLUICE_RUNTIME_CONTROLLER_AGENT_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/dilu/profiler.h"
#include "nlohmann/json.hpp"
#include "runtime/http/http.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {

struct ReportedGpu {
  std::string uuid;
  std::string name;
  int index = 0;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t tokens_per_period = 0;
  absl::Duration period;  // the token server's period
  nlohmann::json raw;     // the GpuStatus as the agent sent it (GET /admin/v1/cluster)
};

struct ReportedInstance {
  int64_t id = 0;
  std::string function;
  std::string gpu;  // uuid
  std::vector<std::string> gpus;  // every GPU in order (first = gpu); empty from older agents
  int port = 0;
  std::string state;  // starting|ready|draining|restarting|stopped|failed|completed
  int restarts = 0;
  double request = 0;
  double limit = 0;
  double time_quota = 0;  // HAS-GPU's q; 0 when absent (agents before time quotas)
  int max_batch = 0;      // the batch it was started with; 0 when the agent does not say
  double sm_share = 0;
  int64_t mem_used_bytes = 0;
  int in_flight = 0;
  std::optional<bool> parked;  // memory-only idle on its token server; absent from older agents
};

struct NodeReport {
  std::string node;
  std::string device;
  std::vector<ReportedGpu> gpus;
  std::vector<ReportedInstance> instances;
};

// A request to `target` (path and query); JSON content type when `body` is not empty.
http::Request AgentRequest(const std::string& method, const std::string& target,
                           std::string body = "");

// Parses a GET /agent/v1/node answer. InvalidArgument naming the field when malformed. Optional
// numeric fields of an instance (sm_share, restarts, ...) default to 0 when absent or null.
absl::StatusOr<NodeReport> ParseNodeReport(const std::string& body);

// True for agent states after which the instance process is gone for good.
bool IsTerminalAgentState(const std::string& state);

// What the controller asks an agent to start.
struct StartInstanceArgs {
  int64_t id = 0;
  std::string gpu_uuid;
  double request = 1;
  double limit = 1;
  bool restart = true;  // "on-failure", else "never"
  int max_batch = 1;    // SLUICE_MAX_BATCH of the instance
  std::vector<std::string> gpu_uuids;  // all of its GPUs (first = gpu_uuid); sent as "gpus"
  double time_quota = 1;  // sent as "time_quota" only when != 1 (the agent's default)
};

// The StartInstance body for `spec` (command, env, model path, memory limit from memory_gib).
std::string StartInstanceBody(const FunctionSpec& spec, const StartInstanceArgs& args);
// The PUT /agent/v1/instances/{id}/quota body; "time_quota" only when given (the agent keeps
// absent fields, so profiling trials leave it alone and vertical steps always send it).
std::string QuotaBody(double request, double limit, bool slo_sensitive, int64_t mem_limit_bytes,
                      std::optional<double> time_quota = std::nullopt);

// Inference and LLM functions are SLO-sensitive; training is best-effort.
bool IsSloSensitive(FunctionKind kind);
// memory_gib in bytes.
int64_t MemoryLimitBytes(const FunctionSpec& spec);

// Parses an instance's POST /sluice/v1/trial answer {"latency_ms", "throughput", "memory_bytes"}.
// InvalidArgument naming the field when malformed or not positive.
absl::StatusOr<core::TrialResult> ParseTrialResult(const std::string& body);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_AGENT_API_H_
