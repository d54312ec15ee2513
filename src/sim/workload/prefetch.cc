// Prefetched arrival sources (prefetch.h): a single-producer single-consumer ring per source;
// the helper thread fills every ring it can, then sleeps until a consumer frees room; a consumer
// that finds its ring empty fills it itself (the producer's role passes by a per-source flag).
#include "sim/workload/prefetch.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <utility>

#include "common/status.h"

namespace sluice::sim {

namespace {

// The ring size for a Next() source of `rate` arrivals per second (see the constructor).
uint64_t NextCapacity(double rate, uint64_t least, uint64_t most, double ahead_s) {
  const double want = rate * ahead_s;
  if (!(want > static_cast<double>(least)))
    return least;
  return want >= static_cast<double>(most) ? most : std::bit_ceil(static_cast<uint64_t>(want));
}

}  // namespace

PrefetchedSource::PrefetchedSource(std::unique_ptr<ArrivalSource> inner)
    : inner_(std::move(inner)),
      counts_(false),
      start_(),
      step_(),
      end_(),
      capacity_(NextCapacity(inner_ != nullptr ? inner_->MeanRate() : 0, kCapacity, kMaxCapacity,
                             kAheadSeconds)),
      items_(capacity_) {
  SLUICE_CHECK(inner_ != nullptr);
}

PrefetchedSource::PrefetchedSource(std::unique_ptr<ArrivalSource> inner, absl::Time start,
                                   absl::Duration step, absl::Time end)
    : inner_(std::move(inner)),
      counts_(true),
      start_(start),
      step_(step),
      end_(end),
      produce_from_(start),
      take_from_(start),
      capacity_(kCapacity),
      items_(capacity_) {
  SLUICE_CHECK(inner_ != nullptr && step > absl::ZeroDuration() && start <= end);
}

bool PrefetchedSource::Fill() {
  uint64_t t = tail_.load(std::memory_order_relaxed);
  bool any = false;
  while (!done_ && t - head_.load(std::memory_order_acquire) < capacity_) {
    Item& it = items_[t & (capacity_ - 1)];
    if (counts_) {
      if (produce_from_ >= end_) {
        done_ = true;
        break;
      }
      const absl::Time to = std::min(produce_from_ + step_, end_);
      it.count = inner_->DrawCount(produce_from_, to).value_or(0);
      it.has = true;
      produce_from_ = to;
    } else {
      const std::optional<Arrival> a = inner_->Next();
      it.has = a.has_value();
      if (a)
        it.arrival = *a;
      done_ = !it.has;
    }
    tail_.store(++t, std::memory_order_release);
    any = true;
  }
  return any;
}

bool PrefetchedSource::TryFill(bool* filled) {
  bool idle = false;
  *filled = producing_.compare_exchange_strong(idle, true, std::memory_order_acquire);
  if (!*filled)
    return false;  // the other thread is filling it
  const bool any = Fill();
  producing_.store(false, std::memory_order_release);
  return any;
}

PrefetchedSource::Item PrefetchedSource::Take() {
  const uint64_t h = head_.load(std::memory_order_relaxed);
  while (tail_.load(std::memory_order_acquire) == h) {
    // Empty: fill it here rather than wait for the helper's next pass (a fluid batch takes up
    // to a minute of a busy function's arrivals at once), unless the helper is filling it now.
    bool filled = false;
    const bool any = TryFill(&filled);
    if (filled) {
      SLUICE_CHECK_MSG(any, "prefetched source asked past its end");
    } else {
      std::this_thread::yield();
    }
  }
  const Item it = items_[h & (capacity_ - 1)];
  head_.store(h + 1, std::memory_order_release);
  if (owner_ != nullptr && tail_.load(std::memory_order_acquire) - (h + 1) < capacity_ / 2)
    owner_->WakeIfSleeping();
  return it;
}

std::optional<Arrival> PrefetchedSource::Next() {
  SLUICE_CHECK_MSG(!counts_, "a source prefetched for counts was asked for Next()");
  if (exhausted_)
    return std::nullopt;
  const Item it = Take();
  exhausted_ = !it.has;
  return it.has ? std::optional<Arrival>(it.arrival) : std::nullopt;
}

std::optional<int64_t> PrefetchedSource::DrawCount(absl::Time from, absl::Time to) {
  SLUICE_CHECK_MSG(counts_, "a source prefetched for Next() was asked for counts");
  // Only the grid's next window can be answered: its count is drawn already.
  SLUICE_CHECK_MSG(from == take_from_ && from < end_ && to == std::min(from + step_, end_),
                   "prefetched counts asked off their grid");
  take_from_ = to;
  return Take().count;
}

void ArrivalPrefetcher::Add(PrefetchedSource* source) {
  SLUICE_CHECK(!thread_.joinable() && source->owner_ == nullptr);
  source->owner_ = this;
  sources_.push_back(source);
}

void ArrivalPrefetcher::Start() {
  SLUICE_CHECK(!thread_.joinable());
  stop_.store(false);
  thread_ = std::thread([this] { Loop(); });
}

void ArrivalPrefetcher::Stop() {
  if (!thread_.joinable())
    return;
  stop_.store(true);
  Wake();
  thread_.join();
  for (PrefetchedSource* s : sources_)
    s->owner_ = nullptr;  // the consumer fills its own ring from now on
}

// A ring is refilled once it is down to half (what the consumer's wake-up signals), so the
// helper draws in runs and sleeps in between instead of topping up one item at a time.
bool PrefetchedSource::Refill() {
  const uint64_t t = tail_.load(std::memory_order_relaxed);
  if (t - head_.load(std::memory_order_acquire) >= capacity_ / 2)
    return false;
  bool filled = false;
  return TryFill(&filled);
}

void ArrivalPrefetcher::Loop() {
  while (!stop_.load()) {
    bool any = false;
    for (PrefetchedSource* s : sources_)
      any = s->Refill() || any;
    if (any)
      continue;
    sleeping_.store(true);
    for (PrefetchedSource* s : sources_)  // room freed before sleeping_ was seen is found here
      any = s->Refill() || any;
    if (!any) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(10), [this] { return wake_ || stop_.load(); });
      wake_ = false;
    }
    sleeping_.store(false);
  }
}

void ArrivalPrefetcher::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_one();
}

void ArrivalPrefetcher::WakeIfSleeping() {
  if (sleeping_.load())
    Wake();
}

}  // namespace sluice::sim
