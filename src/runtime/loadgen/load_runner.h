// The open-loop load generator behind `sluice load`: sends one KServe v2 infer request to the
// gateway at each arrival time, never waiting for answers, samples the controller's function list
// every `sample_period`, and summarises the run (report.h). Blocking; runs its own EventLoop.
// Thread-compatible: one call at a time per LoadOptions.
#ifndef SLUICE_RUNTIME_LOADGEN_LOAD_RUNNER_H_
#define SLUICE_RUNTIME_LOADGEN_LOAD_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/loadgen/progress.h"
#include "runtime/loadgen/report.h"

namespace sluice::runtime {

struct LoadOptions {
  std::string gateway = "127.0.0.1:7070";       // "host:port" or "http://host:port"
  std::string controller = "127.0.0.1:7071";    // admin API, for the SLO, cold starts, timeline
  std::string function;                         // the function to invoke
  std::string data;                             // request body (KServe v2 JSON)
  std::vector<absl::Duration> arrivals;         // send times from the start, sorted
  absl::Duration duration = absl::Seconds(30);  // no request is sent at or after this
  // After `duration`, outstanding requests get this long to finish; then they count as
  // "timeout". Each request is also sent with this as its client timeout.
  absl::Duration grace = absl::Seconds(10);
  absl::Duration sample_period = absl::Milliseconds(100);
  // The live line (`sluice load` on a terminal): called on the runner's loop thread every
  // `progress_period` while requests are being sent or awaited, and once at the end. Null: never.
  std::function<void(const LoadProgress&)> on_progress;
  absl::Duration progress_period = absl::Milliseconds(250);
};

// Runs the load and returns the report. Errors before any request is sent: InvalidArgument for
// a bad address, NotFound when the controller does not know the function, Unavailable when the
// controller cannot be reached. Failures of individual requests are counted in the report.
absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_LOADGEN_LOAD_RUNNER_H_
