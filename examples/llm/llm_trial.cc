// POST /sluice/v1/trial for the emulated LLM (the controller's profiling trials, docs/platform.md
// "Instance API"): for an LLM a trial of batch b is one decode step of b sequences at the default
// context (core::LatencyModel's meaning of BatchLatency for LLMs), timed by the perf model exactly
// as the generate path is, after waiting that long so a trial takes real time like any other.
// Runs on the server's event loop.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "llm_server.h"
#include "nlohmann/json.hpp"
#include "runtime/sdk/trial.h"

namespace sluice::examples {

void LlmServer::OnTrial(http::Request& req, http::Responder respond) {
  absl::StatusOr<runtime::TrialRequest> r = runtime::ParseTrialRequest(req.body);
  if (!r.ok())
    return respond(http::ErrorResponse(400, std::string(r.status().message())));
  const core::LlmPerfModel& m = engine_.model();
  const int64_t context = static_cast<int64_t>(r->batch) * kTrialContextTokens;
  const absl::Duration step = m.DecodeTime(r->batch, context);
  const runtime::TrialSummary s = runtime::SummarizeTrial(
      r->batch, std::vector<absl::Duration>(1, step), m.spec().param_bytes.count() / m.spec().tp);
  const std::string body = runtime::TrialJson(s, *r).dump();
  loop_.RunAt(loop_.Now() + step * r->iterations,
              [respond = std::move(respond), body]() mutable {
                respond(http::JsonResponse(200, body));
              });
}

}  // namespace sluice::examples
