// Instance: one deployed copy of a function (a serving replica, a training job's workers, or a
// pipeline stage's CPU worker, which holds no GPU) as the simulator sees it: lifecycle state, the
// GPUs it holds, its queue of dispatched requests and the batch it executes. Owned by the engine
// (engine.h); not thread-safe.
#ifndef SLUICE_SIM_ENGINE_INSTANCE_H_
#define SLUICE_SIM_ENGINE_INSTANCE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "common/env.h"
#include "common/ids.h"
#include "core/resource/cluster.h"

namespace sluice::sim {

// Instance lifecycle. States and the only legal transitions (TransitionTo dies on any other):
//
//   kCold     created and placed: GPUs, memory and quota are committed in ClusterState, nothing
//             is loaded yet.                                    -> kLoading
//   kLoading  container start + model load in progress (cold start; zero-length for instances
//             that exist at t = 0). Holds its resources, serves nothing.
//                                                               -> kWarm, kDraining (scaled in
//                                                                  before it became warm)
//   kWarm     serving: receives dispatched requests and executes batches / iterations.
//                                                               -> kDraining
//   kDraining receives nothing new; finishes its queue, the batch in progress and requests
//             whose activations were already in transfer to it.
//                                                               -> kGone
//   kGone     resources released (terminal).
enum class InstanceState : uint8_t { kCold, kLoading, kWarm, kDraining, kGone };

bool IsLegalTransition(InstanceState from, InstanceState to);
absl::string_view StateName(InstanceState s);

// One request as the engine tracks it. Token counts are 0 unless the workload carries them.
// `arrival` is the arrival at this function (for a pipeline stage after the first: the previous
// stage's completion plus the activation transfer time, so time held at the stage's gateway counts
// as time at the stage). `pipe` indexes the engine's pipeline-request table (-1: no pipeline).
struct Request {
  absl::Time arrival;
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
  int32_t pipe = -1;
};

// A batch in execution; up to 4 requests are stored inline (one allocation less per instance).
using RequestBatch = absl::InlinedVector<Request, 4>;

// FIFO of requests: a vector with a moving head, compacted once the consumed prefix dominates.
// Unlike std::deque it allocates nothing while short (4 requests inline), which matters with tens
// of thousands of mostly idle instances.
class RequestQueue {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  const Request& front() const { return items_[head_]; }
  void push_back(const Request& r) { items_.push_back(r); }
  void pop_front() { Consume(1); }
  // Moves the first `n` (<= size()) requests into `out`, replacing its contents.
  void PopFront(size_t n, RequestBatch& out) {
    out.assign(items_.begin() + static_cast<std::ptrdiff_t>(head_),
               items_.begin() + static_cast<std::ptrdiff_t>(head_ + n));
    Consume(n);
  }
  void clear() {
    items_.clear();
    head_ = 0;
  }

 private:
  void Consume(size_t n) {
    head_ += n;
    if (head_ == items_.size()) {
      clear();
    } else if (head_ >= 64 && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  absl::InlinedVector<Request, 4> items_;
  size_t head_ = 0;
};

class Instance {
 public:
  Instance(common::InstanceId id, int function, std::vector<common::GpuId> gpus);

  common::InstanceId id() const { return id_; }
  int function() const { return function_; }
  const std::vector<common::GpuId>& gpus() const { return gpus_; }
  InstanceState state() const { return state_; }
  // Moves to `to`; SLUICE_CHECK-fails when the transition is not listed above the enum.
  void TransitionTo(InstanceState to);

  // Deployed = counted by the horizontal scaler (loading or warm).
  bool deployed() const {
    return state_ == InstanceState::kLoading || state_ == InstanceState::kWarm;
  }
  // Requests dispatched here and not yet completed (in transfer to it + waiting + executing).
  int64_t outstanding() const {
    return static_cast<int64_t>(queue.size() + batch.size()) + inbound;
  }
  // Nothing dispatched here is left (a draining instance may then retire).
  bool idle() const { return !executing_ && queue.empty() && inbound == 0; }
  // A CPU worker of a pipeline stage (no GPUs; `cpu_node`, `cpu_cores`).
  bool is_cpu() const { return gpus_.empty(); }
  bool executing() const { return executing_; }
  void set_executing(bool e) { executing_ = e; }

  // Dispatched requests waiting for a batch, oldest first.
  RequestQueue queue;
  // The batch in execution (empty when idle; training jobs leave it empty).
  RequestBatch batch;
  // Pending max-queue-delay timer (0 = none).
  common::Env::TimerId batch_timer = 0;
  // Pending end of the cold start (0 = none).
  common::Env::TimerId load_timer = 0;
  absl::Time placed_at;
  absl::Time warm_at;
  // Quota it holds on each of its GPUs (a hybrid scaler may change it while it runs) and the
  // largest batch it forms.
  core::SmQuota quota;
  int max_batch = 1;
  // Pipeline stages: requests dispatched here whose activations are still in transfer.
  int64_t inbound = 0;
  // CPU workers: the node whose cores it occupies, and how many.
  int cpu_node = -1;
  int cpu_cores = 0;
  // Memory-only idle (issue 13): parked = resident in GPU memory with core::ParkedQuota() in
  // place of its SM share (orthogonal to the state: a warm instance may be parked). A parked
  // instance that receives a request is un-parked at once and starts no batch before `wake_at`.
  bool parked = false;
  absl::Time wake_at = absl::InfinitePast();
  // Since when nothing has been dispatched to it (outstanding() == 0; idle-memory metric and
  // "park the longest idle first").
  absl::Time idle_since;

 private:
  common::InstanceId id_;
  int function_;
  std::vector<common::GpuId> gpus_;
  InstanceState state_ = InstanceState::kCold;
  bool executing_ = false;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_INSTANCE_H_
