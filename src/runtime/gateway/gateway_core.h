// GatewayCore: the gateway's state and request path, all on one http::EventLoop (internal to
// GatewayDaemon). gateway_core.cc holds the request path (admission, batching, dispatch,
// completions, deadlines, retries); gateway_control.cc the control plane (routes, load, wake).
// Thread safety: every method runs on the loop thread.
#ifndef SLUICE_RUNTIME_GATEWAY_GATEWAY_CORE_H_
#define SLUICE_RUNTIME_GATEWAY_GATEWAY_CORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"

#include "core/serving/function_queue.h"
#include "core/serving/weighted_dispatcher.h"
#include "runtime/gateway/gateway_daemon.h"
#include "runtime/gateway/gateway_metrics.h"
#include "runtime/gateway/load_window.h"
#include "runtime/gateway/openai_api.h"
#include "runtime/gateway/route_table.h"
#include "runtime/http/http.h"

namespace sluice::runtime::internal {

// The OpenAI side of a request to an LLM function (gateway_openai.cc): the parsed request, the
// client's event stream once started, and per-attempt relay state of the instance's token stream.
struct LlmCall {
  OpenAiRequest request;
  std::string id;  // "cmpl-<n>" / "chatcmpl-<n>", also the instance's request_id
  int64_t created = 0;
  std::shared_ptr<http::ResponseStream> stream;  // set once the first event is sent
  // Per attempt (reset by SendLlm).
  int upstream_status = 0;
  std::string upstream_body;  // a non-200 answer, for the error message
  SseParser parser;
  std::string text;  // non-streaming: the tokens so far
  int64_t tokens = 0;
  absl::Time first_token = absl::InfinitePast();
  std::optional<InstanceEvent> done;   // the instance's final event
  std::string failure;                 // an error or malformed event
  int64_t prefill_prompt_tokens = 0;   // P/D: as the prefill instance counted them
  bool disaggregated = false;          // P/D: the first token came from a prefill instance
  // The instance generating (or about to decode) this request's tokens: where a cancel goes
  // when the streaming client disconnects (gateway_openai.cc CancelLlm); -1 before dispatch.
  int64_t generating = -1;
};

// One accepted request, from admission until it is answered. While queued it is also in its
// function's FunctionQueue; while in flight its deadline is in `in_flight_deadlines`.
struct PendingRequest {
  std::string function;
  std::string body;  // the KServe v2 body, forwarded unchanged
  std::optional<std::string> kserve_id;
  http::Responder respond;
  absl::Time arrival;
  absl::Time deadline;
  int attempts = 0;            // batches it was sent in
  std::vector<int64_t> tried;  // instances that failed it
  bool in_flight = false;
  std::shared_ptr<LlmCall> llm;  // LLM functions only (OpenAI API)
};

struct FunctionState {
  explicit FunctionState(core::FunctionQueue q) : queue(std::move(q)) {}
  Route route;
  core::FunctionQueue queue;
  core::WeightedDispatcher dispatcher;
  std::map<int64_t, http::Endpoint> endpoints;  // instances in the route with a valid url
  std::map<int64_t, std::string> roles;         // LLM P/D role per instance ("" = both)
  std::map<int64_t, int> decode_ready;          // P/D: ready decode instances -> streams open
  int starting = 0;                             // instances in state "starting"
  std::set<std::pair<absl::Time, uint64_t>> in_flight_deadlines;
  common::Env::TimerId timer = 0;
  absl::Time timer_at = absl::InfiniteFuture();
  int64_t arrivals = 0;  // since the last load report
  LoadWindow window;     // inter-arrival CV and mean sojourn since the last load report
  int64_t in_flight_requests = 0;
  absl::Time last_wake = absl::InfinitePast();
  FunctionMetrics* metrics = nullptr;
};

struct PipelineCall;  // gateway_pipeline.cc: one request's walk through a pipeline's stages

class GatewayCore {
 public:
  GatewayCore(const GatewayOptions& options, http::EventLoop& loop, http::Client& client,
              GatewayMetrics& metrics, http::Endpoint controller);
  // Before StartControl: every controller to follow (the first is polled first) and the id
  // this gateway's load reports carry, so the controller sums the replicas' reports.
  void SetControllers(std::vector<http::Endpoint> controllers, std::string gateway_id);
  ~GatewayCore();

  // HTTP handlers (gateway_core.cc).
  void HandleInfer(http::Request& req, http::Responder respond);
  // KServe v2 metadata and model readiness (gateway_metadata.cc): `GET /v2`,
  // `GET /v2/models/{name}[/versions/{version}][/ready]`; 404 naming an unknown model or version.
  void HandleServerMetadata(http::Request& req, http::Responder respond);
  void HandleModelMetadata(http::Request& req, http::Responder respond);
  void HandleModelReady(http::Request& req, http::Responder respond);
  void HandleReady(http::Request& req, http::Responder respond);
  // OpenAI API for LLM functions (gateway_openai.cc).
  void HandleModels(http::Request& req, http::Responder respond);
  void HandleOpenAi(http::Request& req, http::Responder respond, bool chat);
  // Pipelines (gateway_pipeline.cc): a request to a pipeline's route enters its stage 0.
  void HandlePipeline(http::Request& req, http::Responder respond);

  // Control plane (gateway_control.cc).
  void StartControl();  // first poll now, then every routes_poll; load every load_report
  void Shutdown();      // cancels every timer; nothing is scheduled afterwards
  void ApplyRoutes(RouteTable table);
  int64_t routes_version() const { return routes_version_; }

 private:
  // Request path.
  void Finish(uint64_t id, http::Response response);
  void TryDispatch(FunctionState& f);
  void SendBatch(FunctionState& f, int64_t instance, std::vector<uint64_t> ids);
  void OnBatchDone(const std::string& function, int64_t instance, const std::vector<uint64_t>& ids,
                   absl::StatusOr<http::Response> result);
  void AnswerBatch(const std::string& function, int64_t instance, const std::vector<uint64_t>& ids,
                   const http::Response& response);
  // A batch failed on `instance` with `why`: retries each request elsewhere or answers 502.
  void RetryOrFail(FunctionState* f, int64_t instance, const std::vector<uint64_t>& ids,
                   const std::string& why);
  void ExpireDeadlines(FunctionState& f, absl::Time now);
  // LLM request path (gateway_openai.cc): one request per dispatch, streamed from the instance.
  void SendLlm(FunctionState& f, int64_t instance, uint64_t id);
  void OnLlmData(uint64_t id, std::string_view data);
  void OnLlmToken(PendingRequest& p, const std::string& text);
  // The streaming client has gone: POST /sluice/v1/cancel/{request_id} to the generating
  // instance (it stops and frees the KV) and the request is finished (499, nobody reads it).
  void CancelLlm(uint64_t id);
  // P/D (gateway_pd.cc): prefill on `instance` pushing the KV to a decode instance, first token
  // relayed, then the decode instance's token stream.
  void SendPrefill(FunctionState& f, int64_t instance, int64_t decode, uint64_t id);
  void OnPrefillDone(const std::string& function, int64_t instance, int64_t decode, uint64_t id,
                     absl::StatusOr<http::Response> result);
  void SendDecode(FunctionState& f, int64_t decode, uint64_t id);
  void OnLlmDone(const std::string& function, int64_t instance, uint64_t id, absl::Status status);
  void EndLlm(FunctionState* f, int64_t instance, uint64_t id, const absl::Status& status);
  // The instance's stream ended with its done event: the last chunk / the whole completion.
  void CompleteLlm(FunctionState* f, uint64_t id);
  // Answers an LLM request: OpenAI's error shape for errors; ends the event stream if started.
  void FinishLlm(PendingRequest& p, http::Response response);
  void Rearm(FunctionState& f);
  void OnTimer(const std::string& function);
  void FailQueued(FunctionState& f, int status, const std::string& message);

  // Control plane.
  void PollRoutes();
  void OnRoutes(absl::StatusOr<http::Response> result);
  // After a failed poll: the leader a 503 names, else the next controller in the list.
  void FollowLeader(const absl::StatusOr<http::Response>& result);
  void ApplyRoute(const Route& route);
  void RemoveFunction(const std::string& name);
  void MaybeWake(FunctionState& f);
  void ReportLoad();
  // Pipelines (gateway_pipeline.cc).
  void ApplyPipelines(const RouteTable& table);  // pipelines_ from the stage routes
  void SubmitStage(std::shared_ptr<PipelineCall> call, int stage, std::string body);
  void OnStageDone(std::shared_ptr<PipelineCall> call, int stage, http::Response response);
  void FinishPipeline(PipelineCall& call, http::Response response);

  const GatewayOptions options_;
  http::EventLoop& loop_;
  http::Client& client_;
  GatewayMetrics& metrics_;
  http::Endpoint controller_;  // the controller polled now (one of controllers_)
  // Several controllers (issue 12): the gateway follows the leader - a 503 naming it, or a
  // failed poll, moves controller_ (gateway_control.cc). Set by SetControllers.
  std::vector<http::Endpoint> controllers_;
  size_t controller_index_ = 0;
  std::string gateway_id_;  // sent with each load report ("" before SetControllers)
  std::string followed_;    // the controller whose routes were applied last
  absl::flat_hash_map<std::string, std::unique_ptr<FunctionState>> functions_;
  absl::flat_hash_map<uint64_t, PendingRequest> pending_;
  // Pipeline name -> its stage functions in order ("" where the route table lacks a stage).
  absl::flat_hash_map<std::string, std::vector<std::string>> pipelines_;
  uint64_t next_id_ = 1;
  int64_t routes_version_ = -1;
  bool poll_in_flight_ = false;
  bool poll_again_ = false;
  std::string last_route_error_;  // last rejected route table's reason (logged once)
  bool shut_down_ = false;
  common::Env::TimerId poll_timer_ = 0;
  common::Env::TimerId load_timer_ = 0;
  absl::Time last_load_report_;
};

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_GATEWAY_GATEWAY_CORE_H_
