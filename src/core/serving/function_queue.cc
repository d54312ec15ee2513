// Three views of one set of requests: arrival order (batches), deadline order (expiry), and id
// (removal). std::list iterators stay valid across erasures elsewhere, so the views point at it.
#include "core/serving/function_queue.h"

#include <cmath>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {

absl::Duration RetryAfter(int64_t queued, double capacity_rps) {
  if (!(capacity_rps > 0.0))
    return absl::Seconds(1);
  const double seconds = std::ceil(static_cast<double>(queued) / capacity_rps);
  return absl::Seconds(std::max(1.0, seconds));
}

absl::StatusOr<FunctionQueue> FunctionQueue::Create(int64_t max_queued) {
  if (max_queued < 1)
    return absl::InvalidArgumentError(absl::StrCat("queue_max must be >= 1, got ", max_queued));
  return FunctionQueue(max_queued);
}

void FunctionQueue::set_max_queued(int64_t max_queued) {
  SLUICE_CHECK(max_queued >= 1);
  max_queued_ = max_queued;
}

AdmitResult FunctionQueue::Admit(const QueuedRequest& r, double capacity_rps) {
  if (size() >= max_queued_)
    return AdmitResult{false, RetryAfter(size(), capacity_rps)};
  SLUICE_CHECK(!by_id_.contains(r.id));
  auto it = fifo_.insert(fifo_.end(), Entry{r, by_deadline_.end()});
  it->by_deadline = by_deadline_.emplace(r.deadline, it);
  by_id_.emplace(r.id, it);
  return AdmitResult{true, absl::ZeroDuration()};
}

void FunctionQueue::Erase(Fifo::iterator it) {
  by_deadline_.erase(it->by_deadline);
  by_id_.erase(it->request.id);
  fifo_.erase(it);
}

std::vector<QueuedRequest> FunctionQueue::NextBatch(int max_batch) {
  SLUICE_CHECK(max_batch >= 1);
  std::vector<QueuedRequest> batch;
  while (!fifo_.empty() && static_cast<int>(batch.size()) < max_batch) {
    batch.push_back(fifo_.front().request);
    Erase(fifo_.begin());
  }
  return batch;
}

std::vector<QueuedRequest> FunctionQueue::Expired(absl::Time now) {
  std::vector<QueuedRequest> out;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    const Fifo::iterator it = by_deadline_.begin()->second;
    out.push_back(it->request);
    Erase(it);
  }
  return out;
}

bool FunctionQueue::Remove(uint64_t id) {
  auto found = by_id_.find(id);
  if (found == by_id_.end())
    return false;
  Erase(found->second);
  return true;
}

std::optional<absl::Time> FunctionQueue::OldestArrival() const {
  if (fifo_.empty())
    return std::nullopt;
  return fifo_.front().request.arrival;
}

absl::Time FunctionQueue::NextDeadline() const {
  return by_deadline_.empty() ? absl::InfiniteFuture() : by_deadline_.begin()->first;
}

}  // namespace sluice::core
