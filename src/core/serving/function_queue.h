// FunctionQueue: one function's bounded FIFO of waiting requests (id, arrival, deadline) in the
// gateway: admission with a Retry-After estimate, batch pops, deadline expiry. Pure policy (time
// comes in as arguments); used by runtime/gateway. Not thread-safe (one event loop owns it).
#ifndef SLUICE_CORE_SERVING_FUNCTION_QUEUE_H_
#define SLUICE_CORE_SERVING_FUNCTION_QUEUE_H_

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::core {

struct QueuedRequest {
  uint64_t id = 0;     // caller's request id, unique among queued requests
  absl::Time arrival;  // when the request reached the gateway
  absl::Time deadline;
};

struct AdmitResult {
  bool accepted = false;
  // When rejected (queue full): how long the client should wait before retrying, whole seconds,
  // at least 1 s: ceil(queued / capacity_rps), or 1 s when the capacity is unknown (<= 0).
  absl::Duration retry_after = absl::ZeroDuration();
};

// ceil(queued / capacity_rps) seconds, at least 1 s; 1 s when capacity_rps <= 0 (unknown).
absl::Duration RetryAfter(int64_t queued, double capacity_rps);

class FunctionQueue {
 public:
  // InvalidArgument unless max_queued >= 1.
  static absl::StatusOr<FunctionQueue> Create(int64_t max_queued);

  // Appends the request, or rejects it when `size() == max_queued()`. `capacity_rps` is the
  // function's current serving capacity (sum over ready instances) for the Retry-After estimate.
  // Precondition: `r.id` is not queued already.
  AdmitResult Admit(const QueuedRequest& r, double capacity_rps);
  // Pops up to `max_batch` (>= 1) requests, oldest first.
  std::vector<QueuedRequest> NextBatch(int max_batch);
  // Pops every request whose deadline is <= now, in deadline order (ties: arrival order).
  std::vector<QueuedRequest> Expired(absl::Time now);
  // Removes one request by id (e.g. its client went away). False when it is not queued.
  bool Remove(uint64_t id);

  // Arrival of the oldest queued request; nullopt when empty.
  std::optional<absl::Time> OldestArrival() const;
  // Earliest deadline among queued requests; InfiniteFuture when empty.
  absl::Time NextDeadline() const;
  int64_t size() const { return static_cast<int64_t>(fifo_.size()); }
  bool empty() const { return fifo_.empty(); }
  int64_t max_queued() const { return max_queued_; }
  // Changes the bound (>= 1). Lowering it evicts nothing: admissions fail until size() is below.
  void set_max_queued(int64_t max_queued);

 private:
  explicit FunctionQueue(int64_t max_queued) : max_queued_(max_queued) {}
  struct Entry;
  using Fifo = std::list<Entry>;
  using DeadlineIndex = std::multimap<absl::Time, Fifo::iterator>;
  struct Entry {
    QueuedRequest request;
    DeadlineIndex::iterator by_deadline;
  };
  void Erase(Fifo::iterator it);

  int64_t max_queued_;
  Fifo fifo_;                  // arrival order
  DeadlineIndex by_deadline_;  // deadline order; equal keys keep insertion (arrival) order
  std::map<uint64_t, Fifo::iterator> by_id_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_SERVING_FUNCTION_QUEUE_H_
