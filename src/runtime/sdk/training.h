// Training loop API of the function SDK: a training-style function hands over one step and the
// SDK runs `iterations` of them on the calling thread while an HTTP loop serves
// /v2/health/live, /v2/health/ready, /sluice/v1/stats and /sluice/v1/trial (k extra steps timed
// one by one -> steps per second). RunTraining() is the whole main() of such a function.
// Thread safety: TrainingLoop's methods may be called from any thread; Run from one thread.
#ifndef SLUICE_RUNTIME_SDK_TRAINING_H_
#define SLUICE_RUNTIME_SDK_TRAINING_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

#include "runtime/http/http.h"
#include "runtime/sdk/trial.h"

namespace sluice::runtime {

// One training step; `step` counts every step run so far (trial steps included). An error ends
// the run.
using StepFn = std::function<absl::Status(int64_t step)>;

struct TrainingOptions {
  std::string name = "training";
  std::string host = "127.0.0.1";
  int port = 0;
  int64_t iterations = 1;                 // steps counted toward completion; trial steps are extra
  std::function<int64_t()> memory_bytes;  // peak device memory, for trials; unset: 0

  // name from $SLUICE_FUNCTION, port from $PORT (required), iterations from $SLUICE_ITERATIONS
  // (else `default_iterations`; must be >= 1). InvalidArgument naming the variable.
  static absl::StatusOr<TrainingOptions> FromEnv(const std::string& default_name,
                                                 int64_t default_iterations);
};

// Lifecycle: kStarting (live; ready 503) -> Run() -> kRunning (ready 200; trials run between
// steps) -> kDone (iterations reached, Stop() or a shutdown signal; pending trials answer 409)
// -> kStopped (server closed when Run returns).
class TrainingLoop {
 public:
  static absl::StatusOr<std::unique_ptr<TrainingLoop>> Start(TrainingOptions options);
  ~TrainingLoop();
  int port() const;
  // Runs steps until `iterations` count, Stop() or ShutdownRequested(). OK then; the first
  // failing step's error otherwise. Closes the server before returning. Call once.
  absl::Status Run(const StepFn& step);
  // Makes Run return after the current step. Thread-safe, idempotent.
  void Stop();
  int64_t completed() const { return completed_.load(); }

 private:
  struct PendingTrial {
    TrialRequest request;
    http::Responder respond;
  };
  TrainingLoop() = default;
  void Route(http::Router& router);
  // Runs the queued trials' steps on the Run thread. Error when a step fails.
  absl::Status ServeTrials(const StepFn& step);
  int64_t QueuedTrials();

  TrainingOptions options_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> completed_{0};
  std::atomic<int64_t> steps_{0};
  absl::Mutex mu_;
  std::deque<PendingTrial> trials_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<http::Server> server_;
};

// The main() of a training function: options from the environment (see FromEnv), start serving,
// run `setup` (load data onto the GPU; returns the step), run the loop, print
// {"event":"done",...} and return 0; 1 (error on stderr) when setup or a step fails.
int RunTraining(const std::string& default_name, int64_t default_iterations,
                const std::function<void(TrainingOptions&)>& configure,
                const std::function<absl::StatusOr<StepFn>()>& setup);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_TRAINING_H_
