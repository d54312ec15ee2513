// LoadDriver: an open-loop request sender for the end-to-end tests. Sends KServe v2 infer
// requests to the gateway at a fixed rate on its own http::EventLoop (never waiting for earlier
// answers) and records every request's outcome, so a test can account for each one: answered
// 2xx, answered with an error status and body, or a transport failure / client timeout (which
// the platform promises never happens before the request's deadline). Thread-safe: Start, Wait
// and the accessors may be called from any thread but the driver's loop.
#ifndef SLUICE_TESTS_E2E_LOAD_DRIVER_H_
#define SLUICE_TESTS_E2E_LOAD_DRIVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "runtime/http/http.h"

namespace sluice::runtime::e2e {

struct Outcome {
  int phase = 0;           // the Start call that sent it (0, 1, ...)
  absl::Time sent;         // wall clock when it went out
  absl::Duration latency;  // until its answer or failure
  bool answered = false;   // false until the callback ran
  int status = 0;          // HTTP status; 0 when no answer came (see `error`)
  std::string body;
  absl::Status error;  // transport error or client timeout (status == 0)
};

class LoadDriver {
 public:
  // `deadline` goes out as the Sluice-Timeout-Ms header; the client waits `deadline` plus
  // `client_slack` before giving up on an answer (a request the platform lost).
  static absl::StatusOr<std::unique_ptr<LoadDriver>> Create(
      const std::string& gateway, const std::string& function, std::string body,
      absl::Duration deadline, absl::Duration client_slack = absl::Seconds(3));
  ~LoadDriver();  // stops the loop; requests still out are abandoned

  // Sends ceil(rps * duration) requests evenly spaced from now on (a new phase). Returns at once.
  // A phase started while the previous one is still sending runs alongside it.
  void Start(double rps, absl::Duration duration);
  // Blocks until every request of every phase started so far has an outcome, or `timeout`
  // passes. True when all are answered or failed.
  bool WaitAll(absl::Duration timeout);

  // Copies of the outcomes so far, in send order.
  std::vector<Outcome> outcomes() const;
  int64_t sent() const;

 private:
  LoadDriver() = default;
  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return finished_ >= scheduled_; }
  void SendNext(int phase, int64_t k, int64_t n, absl::Time t0, absl::Duration gap);

  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<http::Client> client_;
  http::Endpoint gateway_;
  std::string target_, body_;
  absl::Duration deadline_, client_slack_;
  mutable absl::Mutex mu_;
  std::vector<Outcome> outcomes_ ABSL_GUARDED_BY(mu_);
  int64_t scheduled_ ABSL_GUARDED_BY(mu_) = 0;  // requests of all phases started
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  int phases_ ABSL_GUARDED_BY(mu_) = 0;
};

// Counts of one set of outcomes.
struct Tally {
  int64_t total = 0, ok = 0, clear_errors = 0, vanished = 0;
  std::string first_unclear;  // the first outcome that is neither ok nor a clear error
};
// ok: 2xx. Clear error: a non-2xx answer whose body is {"error": {"code": <that status>,
// "message": <non-empty>}} (docs/platform.md). Anything else (no answer, a client timeout, an
// unexplained error body) is "vanished". `phase` < 0 counts every phase.
Tally Count(const std::vector<Outcome>& outcomes, int phase = -1);

}  // namespace sluice::runtime::e2e

#endif  // SLUICE_TESTS_E2E_LOAD_DRIVER_H_
