// The controller's route table as the gateway sees it (`GET /internal/v1/routes`,
// docs/platform.md): per function its batching, queue and deadline settings and its instances.
// Parsed strictly so a malformed answer is reported instead of half-applied. Used by GatewayDaemon.
// Thread-safe: values.
#ifndef SLUICE_RUNTIME_GATEWAY_ROUTE_TABLE_H_
#define SLUICE_RUNTIME_GATEWAY_ROUTE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::runtime {

struct RouteInstance {
  int64_t id = 0;
  std::string url;          // "host:port"
  double capacity_rps = 0;  // 0: unknown
  std::string state;        // "ready" receives requests; "starting" makes the gateway hold them
  // LLM functions with P/D disaggregation: "prefill" or "decode"; "" (absent) serves both.
  std::string role;
  double request = 0, limit = 0, sm_share = 0;
};

struct Route {
  std::string name;
  std::string kind;
  // Function state: "ready", "profiling" (held like a cold start), "failed" and "unschedulable"
  // (answered 503), "deleting".
  std::string state;
  double slo_ms = 0;  // 0: none (null in the table)
  int max_batch = 1;
  absl::Duration max_queue_delay = absl::ZeroDuration();
  int64_t queue_max = 256;
  absl::Duration timeout = absl::Seconds(30);
  int64_t desired = 0;
  // A stage function of a pipeline (issue 11): requests to the route `pipeline` enter stage 0
  // and pass every stage in order (gateway_pipeline.cc). Empty: an ordinary function.
  std::string pipeline;
  int stage = 0;   // 0 <= stage < stages
  int stages = 0;  // >= 1 when pipeline is set
  std::vector<RouteInstance> instances;

  bool Unservable() const { return state == "failed" || state == "unschedulable"; }
};

struct RouteTable {
  int64_t version = 0;
  std::vector<Route> functions;
};

// Parses the JSON body of `GET /internal/v1/routes`. InvalidArgument naming the field
// ("functions[1].max_batch: must be an integer >= 1") on a malformed table. Optional fields
// (absent or null) take the documented defaults (queue_max 256, timeout_ms 30000, max_batch 1,
// delay 0); millisecond fields may be fractional.
absl::StatusOr<RouteTable> ParseRouteTable(const std::string& body);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_ROUTE_TABLE_H_
