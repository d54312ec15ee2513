// Pipelines on the gateway (issue 11): a request to a pipeline's route is driven through its
// stage functions by the gateway itself. Stage i's answer (its KServe v2 "outputs": the
// activations, opaque to the gateway) becomes stage i+1's request ("inputs" = those outputs,
// the caller's id kept), admitted to stage i+1's own queue exactly like a client request to that
// function, so every stage keeps its batching, dispatch, retries on another replica, deadlines,
// metrics and load reports. The last stage's answer is the response (model_name = the
// pipeline). A stage that fails ends the request with the stage's status and a message naming
// the stage; one end-to-end deadline bounds the whole walk. Why gateway-driven rather than
// stage-to-stage: gateway_pipeline's README section.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "nlohmann/json.hpp"
#include "runtime/gateway/gateway_core.h"
#include "runtime/gateway/kserve_request.h"

namespace sluice::runtime::internal {

// One client request walking a pipeline. Shared by the stage callbacks in flight (one at a time).
struct PipelineCall {
  std::string pipeline;
  std::vector<std::string> stages;  // stage function names, in order
  std::optional<std::string> kserve_id;
  http::Responder respond;
  absl::Time arrival;
  absl::Time deadline;
  bool answered = false;
};

namespace {

using nlohmann::json;

// The message of an {"error": {"message"}} / {"error": "..."} body, else the body's start.
std::string ErrorMessage(const http::Response& r) {
  const json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_string())
      return e.get<std::string>();
    if (e.is_object() && e.contains("message") && e["message"].is_string())
      return e["message"].get<std::string>();
  }
  return r.body.substr(0, 200);
}

}  // namespace

void GatewayCore::ApplyPipelines(const RouteTable& table) {
  absl::flat_hash_map<std::string, std::vector<std::string>> next;
  for (const Route& r : table.functions) {
    if (r.pipeline.empty() || functions_.contains(r.pipeline))
      continue;  // an ordinary function of that name wins; the controller prevents the clash
    std::vector<std::string>& stages = next[r.pipeline];
    if (static_cast<int>(stages.size()) < r.stages)
      stages.resize(r.stages);
    stages[r.stage] = r.name;
  }
  pipelines_ = std::move(next);
}

void GatewayCore::HandlePipeline(http::Request& req, http::Responder respond) {
  const std::string name = req.param("name");
  const std::vector<std::string>& stages = pipelines_.at(name);
  FunctionMetrics& m = metrics_.ForFunction(name);
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i].empty() || !functions_.contains(stages[i])) {
      metrics_.Requests(m, name, 503).Inc();
      return respond(
          http::ErrorResponse(503, absl::StrCat("pipeline '", name, "' has no route for stage ", i,
                                                " (deploying "
                                                "or deleting)")));
    }
  }
  absl::StatusOr<KserveRequestInfo> info = ValidateKserveRequest(req.body);
  if (!info.ok()) {
    metrics_.Requests(m, name, 400).Inc();
    return respond(http::ErrorResponse(400, std::string(info.status().message())));
  }
  absl::Duration timeout = functions_.at(stages[0])->route.timeout;
  if (const std::string h = req.header("sluice-timeout-ms"); !h.empty()) {
    int64_t ms = 0;
    if (!absl::SimpleAtoi(h, &ms) || ms <= 0)
      return respond(http::ErrorResponse(400, "header Sluice-Timeout-Ms: must be an integer > 0"));
    timeout = absl::Milliseconds(ms);
  }
  auto call = std::make_shared<PipelineCall>();
  call->pipeline = name;
  call->stages = stages;
  call->kserve_id = std::move(info->id);
  call->respond = std::move(respond);
  call->arrival = loop_.Now();
  call->deadline = call->arrival + timeout;
  SubmitStage(std::move(call), 0, std::move(req.body));
}

void GatewayCore::SubmitStage(std::shared_ptr<PipelineCall> call, int stage, std::string body) {
  const absl::Duration left = call->deadline - loop_.Now();
  if (left <= absl::ZeroDuration() || !functions_.contains(call->stages[stage])) {
    return FinishPipeline(
        *call,
        http::ErrorResponse(left <= absl::ZeroDuration() ? 504 : 503,
                            absl::StrCat("pipeline '", call->pipeline, "' stage ", stage, " ('",
                                         call->stages[stage], "'): ",
                                         left <= absl::ZeroDuration()
                                             ? "end-to-end deadline exceeded before the stage"
                                             : "the stage was deleted")));
  }
  http::Request req;
  req.method = "POST";
  req.params.emplace_back("name", call->stages[stage]);
  req.headers.emplace_back("sluice-timeout-ms",
                           absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(absl::Ceil(
                                                                 left, absl::Milliseconds(1))))));
  req.body = std::move(body);
  // The stage's answer may come synchronously (429, 503) or from inside the request path's own
  // loops (Finish): continue on a fresh loop turn so the next admission never re-enters them.
  HandleInfer(req, http::Responder([this, call, stage](http::Response r) mutable {
                loop_.Post([this, call = std::move(call), stage, r = std::move(r)]() mutable {
                  OnStageDone(std::move(call), stage, std::move(r));
                });
              }));
}

void GatewayCore::OnStageDone(std::shared_ptr<PipelineCall> call, int stage,
                              http::Response response) {
  const std::string who = absl::StrCat("pipeline '", call->pipeline, "' stage ", stage, " ('",
                                       call->stages[stage], "')");
  if (shut_down_)
    return FinishPipeline(*call, http::ErrorResponse(503, who + ": the gateway is stopping"));
  if (response.status != 200) {
    http::Response out = http::ErrorResponse(
        response.status, absl::StrCat(who, " failed: ", ErrorMessage(response)));
    for (const auto& [k, v] : response.headers) {
      if (k == "retry-after")
        out.headers.emplace_back(k, v);
    }
    return FinishPipeline(*call, std::move(out));
  }
  json answer = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object() || !answer.contains("outputs") || !answer["outputs"].is_array()) {
    return FinishPipeline(*call,
                          http::ErrorResponse(502, who + " answered without an \"outputs\" list"));
  }
  if (stage + 1 == static_cast<int>(call->stages.size())) {
    answer["model_name"] = call->pipeline;
    return FinishPipeline(*call, http::JsonResponse(200, answer.dump()));
  }
  json next = {{"inputs", std::move(answer["outputs"])}};
  if (call->kserve_id)
    next["id"] = *call->kserve_id;
  SubmitStage(std::move(call), stage + 1, next.dump());
}

void GatewayCore::FinishPipeline(PipelineCall& call, http::Response response) {
  if (call.answered)
    return;
  call.answered = true;
  FunctionMetrics& m = metrics_.ForFunction(call.pipeline);
  metrics_.Requests(m, call.pipeline, response.status).Inc();
  m.duration->Observe(absl::ToDoubleSeconds(loop_.Now() - call.arrival));
  call.respond(std::move(response));
}

}  // namespace sluice::runtime::internal
