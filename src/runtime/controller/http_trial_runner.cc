// HttpTrialRunner: blocking HTTP on the profiling worker thread (never on the event loop), so the
// sleep that lets the token server apply a new quota is a plain sleep.
#include "runtime/controller/http_trial_runner.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "nlohmann/json.hpp"
#include "runtime/controller/agent_api.h"

namespace sluice::runtime {
namespace {

absl::Status CheckAnswer(const absl::StatusOr<http::Response>& r, const char* what,
                         const http::Endpoint& to) {
  if (!r.ok()) {
    return absl::UnavailableError(
        absl::StrCat(what, " at ", to.ToString(), ": ", r.status().message()));
  }
  if (r->status / 100 != 2) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " at ", to.ToString(), ": HTTP ", r->status, ": ", r->body));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<core::TrialResult> HttpTrialRunner::Run(const core::Trial& trial) {
  http::Request quota = AgentRequest(
      "PUT", absl::StrCat("/agent/v1/instances/", target_.instance_id, "/quota"),
      QuotaBody(trial.sm_share, trial.sm_share, target_.slo_sensitive, target_.mem_limit_bytes));
  SLUICE_RETURN_IF_ERROR(CheckAnswer(http::Fetch(target_.agent, std::move(quota), target_.timeout),
                                     "trial quota", target_.agent));
  absl::SleepFor(3 * target_.token_period);

  http::Request run = AgentRequest(
      "POST", "/sluice/v1/trial",
      nlohmann::json{{"batch", trial.batch}, {"iterations", target_.iterations}}.dump());
  absl::StatusOr<http::Response> answer =
      http::Fetch(target_.instance, std::move(run), target_.timeout);
  SLUICE_RETURN_IF_ERROR(CheckAnswer(answer, "trial", target_.instance));
  absl::StatusOr<core::TrialResult> result = ParseTrialResult(answer->body);
  if (!result.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("trial at SM ", trial.sm_share, " batch ",
                                                   trial.batch, ": ", result.status().message()));
  }
  return result;
}

}  // namespace sluice::runtime
