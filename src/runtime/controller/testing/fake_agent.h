// FakeAgent: an in-process node agent for the controller's tests. Implements the agent API of
// docs/platform.md on an http::Server (port 0) and gives every instance its own small server
// answering /sluice/v1/trial from a latency model of <sm_share, batch>, without a GPU or a
// process. Instances become ready at the first GET /agent/v1/node after they start. Records
// StartInstance and quota PUT fields (time_quota included) and reports them back in the node.
// Thread-safe: handlers run on the fake's own loop; the test's accessors lock a mutex.
#ifndef SLUICE_RUNTIME_CONTROLLER_TESTING_FAKE_AGENT_H_
#define SLUICE_RUNTIME_CONTROLLER_TESTING_FAKE_AGENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

#include "core/dilu/profiler.h"
#include "runtime/http/http.h"

namespace sluice::runtime {

// The fake's performance model: t_exec(share, batch) = (base + per_item * batch) *
// (serial + (1 - serial) / share) ms; training uses batch 1. Deterministic.
struct FakeModel {
  double base_ms = 2.0;
  double per_item_ms = 1.5;
  double serial = 0.2;
  int64_t memory_bytes = 1 << 30;
  double LatencyMs(double share, int batch) const;
};

// A TrialRunner over FakeModel, for running core::Profiler directly on the same model.
class FakeModelRunner final : public core::TrialRunner {
 public:
  explicit FakeModelRunner(FakeModel model) : model_(model) {}
  absl::StatusOr<core::TrialResult> Run(const core::Trial& trial) override;

 private:
  FakeModel model_;
};

struct FakeInstance {
  int64_t id = 0;
  std::string function;
  std::string gpu;
  std::vector<std::string> gpus;  // the StartInstance's "gpus" (empty when absent)
  std::string state;  // starting|ready|draining|stopped
  std::string restart;
  double request = 0;
  double limit = 0;
  double time_quota = 1;       // StartInstance's (absent: 1), then the latest quota PUT's
  bool sent_time_quota = false;  // the StartInstance carried "time_quota"
  int max_batch = 0;
  int port = 0;
  bool forgotten = false;  // DELETE of a stopped instance: no longer listed
  // Memory-only idle: set by PUT .../park; as the token server, a request reaching the instance
  // (POST /infer on its server) unparks it; GET /agent/v1/node reports it as "parked".
  bool parked = false;
  int requests = 0;  // POST /infer answered
  // LLM instances (fake_llm.cc): the StartInstance's command, the role it started with
  // ($SLUICE_LLM_ROLE, "colocated" when absent) and then the latest POST /sluice/v1/role's, the
  // counters GET /sluice/v1/stats reports (set by the test through SetLlmStats).
  std::vector<std::string> command;
  std::string role;
  int role_switches = 0;
  int64_t prompt_tokens_total = 0;
  int64_t generated_tokens_total = 0;
  int64_t kv_used_tokens = 0;
  int64_t kv_capacity_tokens = 1000;
  bool refuse_role = false;  // POST /sluice/v1/role answers 409
};

// One PUT /agent/v1/instances/{id}/quota as received.
struct FakeQuotaPut {
  int64_t id = 0;
  double request = 0;
  double limit = 0;
  std::optional<double> time_quota;  // absent: the instance keeps its time quota
};

// One PUT /agent/v1/instances/{id}/park as received.
struct FakePark {
  int64_t id = 0;
  bool parked = false;
};

struct FakeDelete {
  int64_t id = 0;
  std::string drain_ms;   // the query parameter as sent
  bool routed_at_delete;  // the controller's routes still listed the instance at that moment
};

class FakeAgent {
 public:
  // `gpus` emulated GPUs of `gpu_memory_bytes` each, token period 1 ms.
  static absl::StatusOr<std::unique_ptr<FakeAgent>> Start(int gpus, int64_t gpu_memory_bytes,
                                                          FakeModel model);
  ~FakeAgent();

  std::string url() const;  // "127.0.0.1:port"
  // Where DELETE handlers look up the routes ("host:port"); empty: not checked.
  void set_controller(const std::string& url);

  std::vector<FakeInstance> instances() const;  // every instance ever started, by id
  std::vector<FakeDelete> deletes() const;
  int trials() const;  // POST /sluice/v1/trial calls answered
  int quota_puts() const;
  std::vector<FakeQuotaPut> quota_put_log() const;  // every quota PUT, in arrival order
  std::vector<FakePark> park_log() const;           // every park PUT, in arrival order
  std::vector<std::string> params_deletes() const;  // DELETE /agent/v1/params/{model}, in order
  // Live (starting or ready) instances of `function`.
  int Live(const std::string& function) const;
  // fake_llm.cc: sets what instance `id`'s GET /sluice/v1/stats reports (counters are totals).
  void SetLlmStats(int64_t id, int64_t prompt_tokens_total, int64_t generated_tokens_total,
                   int64_t kv_used_tokens);
  void SetRefuseRole(int64_t id, bool refuse);
  // What GET /agent/v1/params lists as ready in its parameter store (before the first call the
  // route answers 404, as an agent without a store does).
  void SetParamsModels(std::vector<std::string> models);
  // GET /agent/v1/node answers `d` after the request came, with the report as it was then (a
  // slow agent whose answer is overtaken by later requests); 0: at once.
  void SetNodeReportDelay(absl::Duration d);

 private:
  FakeAgent() = default;
  http::Router MakeRouter();
  void HandleStart(http::Request& req, http::Responder respond);
  void HandleDelete(http::Request& req, http::Responder respond);
  void HandleQuota(http::Request& req, http::Responder respond);
  void HandlePark(http::Request& req, http::Responder respond);
  std::string NodeJson();
  absl::StatusOr<int> StartInstanceServer(int64_t id);
  void AddLlmRoutes(http::Router& r, int64_t id);  // fake_llm.cc

  FakeModel model_;
  int gpus_ = 0;
  int64_t gpu_memory_bytes_ = 0;
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<http::EventLoop> instance_loop_;
  std::unique_ptr<http::Server> server_;
  mutable absl::Mutex mu_;
  std::string controller_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, FakeInstance> instances_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::unique_ptr<http::Server>> instance_servers_;  // loop thread only
  std::vector<FakeDelete> deletes_ ABSL_GUARDED_BY(mu_);
  int trials_ ABSL_GUARDED_BY(mu_) = 0;
  int quota_puts_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<FakeQuotaPut> quota_put_log_ ABSL_GUARDED_BY(mu_);
  std::vector<FakePark> park_log_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> params_deletes_ ABSL_GUARDED_BY(mu_);
  std::optional<std::vector<std::string>> params_models_ ABSL_GUARDED_BY(mu_);
  absl::Duration node_report_delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_TESTING_FAKE_AGENT_H_
