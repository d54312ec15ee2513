// SimEnv: virtual time over an event queue. Time jumps straight to the next due callback;
// ties are broken by insertion order, so a run is bit-for-bit repeatable. Used by the
// simulator (src/sim) and, via ManualEnv, by tests. Not thread-safe: one thread drives it.
#ifndef SLUICE_COMMON_SIM_ENV_H_
#define SLUICE_COMMON_SIM_ENV_H_

#include <cstdint>
#include <vector>

#include "common/env.h"
#include "common/ring_queue.h"

namespace sluice::common {

class SimEnv : public Env {
 public:
  // Virtual time starts at `start` (the Unix epoch by default).
  explicit SimEnv(absl::Time start = absl::UnixEpoch()) : now_(start) {}

  absl::Time Now() const override { return now_; }
  TimerId RunAt(absl::Time when, Callback cb) override;
  bool Cancel(TimerId id) override;
  void Post(Callback cb) override { RunAt(now_, std::move(cb)); }

  // Runs the next due callback, advancing time to it. Returns false when nothing is pending.
  bool Step();
  // Runs callbacks until none is pending or Stop() is called.
  void Run();
  // Runs every callback due at or before `until`, then sets Now() to `until` (if later).
  void RunUntil(absl::Time until);
  // Makes Run()/RunUntil() return after the callback in progress.
  void Stop() { stopped_ = true; }

  size_t pending() const { return queued_ - cancelled_queued_; }
  uint64_t events_run() const { return events_run_; }
  // Time of the earliest pending callback; InfiniteFuture when none.
  absl::Time NextEventTime();

 private:
  struct Entry {
    absl::Time when;
    uint64_t seq;  // insertion order; tie-breaker
    uint32_t slot;
  };
  struct Slot {
    Callback cb;
    uint32_t generation = 0;
    bool live = false;
  };
  static bool Earlier(const Entry& a, const Entry& b) {
    return a.when != b.when ? a.when < b.when : a.seq < b.seq;
  }
  // The queue is a 4-ary min-heap on (when, seq): half the depth of a binary heap, and the four
  // children of a node share a cache line or two. (when, seq) is a total order, so the pop order
  // (and every run) is the same as with any other exact priority queue.
  void SiftUp(size_t i);
  void PopTop();  // removes heap_[0]
  void PopCancelled();
  // Beside the heap, FIFO lanes for timers set a fixed delay ahead (a vertical controller's
  // period, a sample interval): timers set `delay` after a non-decreasing now are already in
  // (when, seq) order, so a lane is a queue, O(1) a timer. A delay gets a lane when two
  // timers in a row that went to the heap had it (one-off delays rarely repeat exactly), while
  // fewer than kMaxLanes lanes exist or one is empty. The earliest of the heap's top and the
  // lanes' fronts runs next: the order is the heap-only order.
  struct Lane {
    absl::Duration delay;
    RingQueue<Entry> queue;
  };
  static constexpr size_t kMaxLanes = 4;
  Lane* LaneFor(absl::Duration delay);
  // Drops cancelled entries at the fronts; the queue holding the earliest live entry (-1 = the
  // heap) or -2 when nothing is pending.
  int Earliest();
  const Entry& At(int where) const;  // the front entry of `where` (Earliest's answer, not -2)
  void RunFrom(int where);            // pops At(where) and runs its callback
  void Recycle(uint32_t slot);

  absl::Time now_;
  uint64_t next_seq_ = 0;
  uint64_t events_run_ = 0;
  size_t queued_ = 0;  // entries in the heap and the lanes, cancelled ones included
  size_t cancelled_queued_ = 0;
  bool stopped_ = false;
  std::vector<Entry> heap_;
  std::vector<Lane> lanes_;
  absl::Duration last_heap_delay_ = absl::ZeroDuration();
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
};

// ManualEnv: SimEnv that tests advance by hand.
class ManualEnv : public SimEnv {
 public:
  using SimEnv::SimEnv;
  // Fires every callback due within the next `d` (in order) and moves Now() forward by `d`.
  void Advance(absl::Duration d) { RunUntil(Now() + d); }
};

}  // namespace sluice::common

#endif  // SLUICE_COMMON_SIM_ENV_H_
