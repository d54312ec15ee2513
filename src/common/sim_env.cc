// Event queue of SimEnv: a 4-ary min-heap of (time, seq, slot); callbacks live in a slot
// vector recycled through a free list, and a timer id packs (generation, slot) so a stale id
// can never cancel a recycled slot.
#include "common/sim_env.h"

#include <algorithm>

#include "common/status.h"

namespace sluice::common {
namespace {
Env::TimerId MakeId(uint32_t slot, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(slot) + 1);
}
}  // namespace

Env::TimerId SimEnv::RunAt(absl::Time when, Callback cb) {
  if (when < now_) {
    when = now_;
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.live = true;
  const Entry e{when, next_seq_++, slot};
  ++queued_;
  if (Lane* lane = when > now_ ? LaneFor(when - now_) : nullptr; lane != nullptr) {
    lane->queue.push_back(e);
  } else {
    heap_.push_back(e);
    SiftUp(heap_.size() - 1);
  }
  return MakeId(slot, s.generation);
}

SimEnv::Lane* SimEnv::LaneFor(absl::Duration delay) {
  for (Lane& l : lanes_) {
    if (l.delay == delay)
      return &l;
  }
  if (delay != last_heap_delay_) {
    last_heap_delay_ = delay;
    return nullptr;
  }
  for (Lane& l : lanes_) {
    if (l.queue.empty()) {
      l.delay = delay;
      return &l;
    }
  }
  if (lanes_.size() == kMaxLanes)
    return nullptr;
  lanes_.push_back(Lane{delay, {}});
  return &lanes_.back();
}

bool SimEnv::Cancel(TimerId id) {
  if (id == 0) {
    return false;
  }
  const uint32_t slot = static_cast<uint32_t>((id & 0xffffffffULL) - 1);
  const uint32_t generation = static_cast<uint32_t>(id >> 32);
  if (slot >= slots_.size()) {
    return false;
  }
  Slot& s = slots_[slot];
  if (!s.live || s.generation != generation) {
    return false;
  }
  s.live = false;
  s.cb = nullptr;
  ++cancelled_queued_;
  return true;
}

void SimEnv::SiftUp(size_t i) {
  const Entry e = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!Earlier(e, heap_[parent])) {
      break;
    }
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void SimEnv::PopTop() {
  const Entry last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) {
    return;
  }
  size_t i = 0;
  while (true) {
    const size_t first = 4 * i + 1;
    if (first >= n) {
      break;
    }
    size_t best = first;
    const size_t end = std::min(first + 4, n);
    for (size_t c = first + 1; c < end; ++c) {
      if (Earlier(heap_[c], heap_[best])) {
        best = c;
      }
    }
    if (!Earlier(heap_[best], last)) {
      break;
    }
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
}

void SimEnv::Recycle(uint32_t slot) {
  ++slots_[slot].generation;
  free_slots_.push_back(slot);
  --queued_;
}

void SimEnv::PopCancelled() {
  while (!heap_.empty() && !slots_[heap_.front().slot].live) {
    const uint32_t slot = heap_.front().slot;
    PopTop();
    Recycle(slot);
    --cancelled_queued_;
  }
}

int SimEnv::Earliest() {
  PopCancelled();
  int where = heap_.empty() ? -2 : -1;
  const Entry* best = heap_.empty() ? nullptr : &heap_.front();
  for (size_t k = 0; k < lanes_.size(); ++k) {
    RingQueue<Entry>& q = lanes_[k].queue;
    while (!q.empty() && !slots_[q.front().slot].live) {
      Recycle(q.front().slot);
      q.pop_front();
      --cancelled_queued_;
    }
    if (!q.empty() && (best == nullptr || Earlier(q.front(), *best))) {
      best = &q.front();
      where = static_cast<int>(k);
    }
  }
  return where;
}

const SimEnv::Entry& SimEnv::At(int where) const {
  return where == -1 ? heap_.front() : lanes_[where].queue.front();
}

absl::Time SimEnv::NextEventTime() {
  const int where = Earliest();
  return where == -2 ? absl::InfiniteFuture() : At(where).when;
}

bool SimEnv::Step() {
  const int where = Earliest();
  if (where == -2) {
    return false;
  }
  RunFrom(where);
  return true;
}

void SimEnv::RunFrom(int where) {
  const Entry e = At(where);
  if (where == -1) {
    PopTop();
  } else {
    lanes_[where].queue.pop_front();
  }
  --queued_;
  Slot& s = slots_[e.slot];
  Callback cb = std::move(s.cb);
  s.live = false;
  ++s.generation;
  free_slots_.push_back(e.slot);
  SLUICE_CHECK(e.when >= now_);
  now_ = e.when;
  ++events_run_;
  cb();
}

void SimEnv::Run() {
  stopped_ = false;
  while (!stopped_ && Step()) {
  }
}

void SimEnv::RunUntil(absl::Time until) {
  stopped_ = false;
  while (!stopped_) {
    const int where = Earliest();  // once per event: it also drops cancelled entries
    if (where == -2 || At(where).when > until)
      break;
    RunFrom(where);
  }
  if (!stopped_ && until > now_) {
    now_ = until;
  }
}

}  // namespace sluice::common
