// HttpTrialRunner: the runtime's core::TrialRunner. A trial <sm_share, batch> sets the profiling
// instance's quota through its node agent, waits for the token server to apply it, and asks the
// instance itself to run its handler (POST /sluice/v1/trial). Used by the controller's profiling
// job on a worker thread (blocking HTTP); one runner per job, not shared between threads.
#ifndef SLUICE_RUNTIME_CONTROLLER_HTTP_TRIAL_RUNNER_H_
#define SLUICE_RUNTIME_CONTROLLER_HTTP_TRIAL_RUNNER_H_

#include <cstdint>

#include "absl/time/time.h"

#include "core/dilu/profiler.h"
#include "runtime/http/http.h"

namespace sluice::runtime {

struct TrialTarget {
  http::Endpoint agent;         // the node agent hosting the instance
  int64_t instance_id = 0;      // the profiling instance (agent id)
  http::Endpoint instance;      // the instance's own port
  absl::Duration token_period;  // the GPU's token period; 3 of them pass before each trial
  int iterations = 5;           // handler runs per trial (the instance reports the median)
  bool slo_sensitive = true;
  int64_t mem_limit_bytes = 0;
  absl::Duration timeout = absl::Seconds(60);  // per HTTP call
};

class HttpTrialRunner final : public core::TrialRunner {
 public:
  explicit HttpTrialRunner(const TrialTarget& target) : target_(target) {}
  // PUT quota request = limit = trial.sm_share; sleep 3 token periods; POST the trial.
  // Errors name the step (quota or trial), the endpoint and the HTTP status and body.
  absl::StatusOr<core::TrialResult> Run(const core::Trial& trial) override;

 private:
  TrialTarget target_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_HTTP_TRIAL_RUNNER_H_
