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
  heap_.push_back(Entry{when, next_seq_++, slot});
  SiftUp(heap_.size() - 1);
  return MakeId(slot, s.generation);
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
  ++cancelled_in_heap_;
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

void SimEnv::PopCancelled() {
  while (!heap_.empty() && !slots_[heap_.front().slot].live) {
    const uint32_t slot = heap_.front().slot;
    PopTop();
    ++slots_[slot].generation;
    free_slots_.push_back(slot);
    --cancelled_in_heap_;
  }
}

absl::Time SimEnv::NextEventTime() {
  PopCancelled();
  return heap_.empty() ? absl::InfiniteFuture() : heap_.front().when;
}

bool SimEnv::Step() {
  PopCancelled();
  if (heap_.empty()) {
    return false;
  }
  const Entry e = heap_.front();
  PopTop();
  Slot& s = slots_[e.slot];
  Callback cb = std::move(s.cb);
  s.live = false;
  ++s.generation;
  free_slots_.push_back(e.slot);
  SLUICE_CHECK(e.when >= now_);
  now_ = e.when;
  ++events_run_;
  cb();
  return true;
}

void SimEnv::Run() {
  stopped_ = false;
  while (!stopped_ && Step()) {
  }
}

void SimEnv::RunUntil(absl::Time until) {
  stopped_ = false;
  while (!stopped_ && NextEventTime() <= until) {
    Step();
  }
  if (!stopped_ && until > now_) {
    now_ = until;
  }
}

}  // namespace sluice::common
