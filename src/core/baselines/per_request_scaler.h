// PerRequestScaler: scale-per-request serverless scaling (AWS Lambda, SimFaaS's model): each
// instance serves one request at a time, a request that finds no idle instance starts a new one
// (a cold start), and an instance idle for `keep_alive` (10 min by default, like Lambda) goes
// away. A HorizontalScaler for the per-request policy set (core/registry/longtail_policies.h);
// validated against SimFaaS in per_request_scaler_test.cc. One object per function; not
// thread-safe.
#ifndef SLUICE_CORE_BASELINES_PER_REQUEST_SCALER_H_
#define SLUICE_CORE_BASELINES_PER_REQUEST_SCALER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/horizontal.h"

namespace sluice::core {

struct PerRequestConfig {
  absl::Duration keep_alive = absl::Minutes(10);  // idle time before an instance expires, >= 0
  int min_instances = 0;
  int max_instances = 1 << 20;
  // Service time of one request, for the concurrency of a LoadSample (Little's law), >= 0.
  absl::Duration request_latency = absl::Milliseconds(100);
};

// The instance pool as levels: with C(t) concurrent requests (in service or waiting), level k
// is busy while C >= k, so a request arriving to C = c occupies level c + 1 (the idle instance
// it takes) and is a cold start exactly when level c + 1 is not alive. Level k stays alive
// until keep_alive after the last moment C >= k, so the pool size is
//   N(t) = max of C over (t - keep_alive, t],
// clamped to [min_instances, max_instances]. This is the per-instance idle timer with requests
// packed onto the lowest busy levels; with newest-first routing (SimFaaS, Lambda) only the
// expiry moment of an instance differs, by at most one service time (the test measures both
// against SimFaaS's published numbers).
//
// Two ways to feed it: ObserveConcurrency(now, c) at every change of C (exact; the validation
// loop calls it at each arrival with the new C and at each completion with the C before it
// drops), or Observe(sample) once per sampling interval, where C = ceil(rps x request_latency)
// + queued, at least 1 when the interval had an arrival (a request that came and went between
// two samples still used an instance).
class PerRequestScaler : public HorizontalScaler {
 public:
  // InvalidArgument naming the field: keep_alive finite and >= 0, 0 <= min <= max,
  // request_latency >= 0.
  static absl::StatusOr<std::unique_ptr<PerRequestScaler>> Create(const PerRequestConfig& config);

  std::string_view name() const override { return "per-request"; }
  // Samples in non-decreasing `at`.
  void Observe(const LoadSample& sample) override;
  // `now` non-decreasing across calls (expired levels are pruned).
  int Desired(absl::Time now) const override;
  // When the highest alive level above min_instances expires; InfiniteFuture if none. Reflects
  // the pruning of the latest Desired(now), so call that first.
  absl::Time NextWakeup() const override;

  // C(now) = concurrency: levels 1..concurrency are busy at `now`. Times non-decreasing.
  void ObserveConcurrency(absl::Time now, int concurrency);
  // Whether a request arriving at `now` to `concurrency_before` requests in flight is a cold
  // start (no alive idle level for it). Call before ObserveConcurrency for that arrival.
  bool IsColdStart(absl::Time now, int concurrency_before) const;

  const PerRequestConfig& config() const { return config_; }

 private:
  explicit PerRequestScaler(const PerRequestConfig& c) : config_(c) {}

  PerRequestConfig config_;
  // last_busy_[k - 1] = last time level k was busy; non-increasing in k (every observation
  // refreshes a prefix), so expiry removes levels from the back. Pruned lazily by Desired().
  mutable std::vector<absl::Time> last_busy_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_PER_REQUEST_SCALER_H_
