// Arrival sources run ahead of the simulation on one helper thread. Fluid mode's per-window counts
// and generated arrivals are about a tenth of a 50,000-function run, and each function's source
// has its own random stream, so what a source yields does not depend on which thread asks. A
// PrefetchedSource wraps a source for one use fixed up front: its Next() sequence, or DrawCount
// over a grid of windows [start + k step, min(start + (k + 1) step, end)), k = 0, 1, ..., asked
// for in order. It yields exactly what the inner source would, in the same order (the engine's
// results are bit-identical with and without the helper). Used by the engine's fluid mode
// (sim_config.h: FluidConfig::draw_thread).
//
// Thread safety: a PrefetchedSource has one consumer (the simulation's thread) and one producer at
// a time: the ArrivalPrefetcher's helper thread once it was added to a started prefetcher, or
// the consumer itself when it finds the ring empty and the helper is not filling it (an atomic
// flag hands the role over, so the inner source is only ever drawn by its holder), or always
// the consumer for a wrapper without a prefetcher. MeanRate() and
// InterArrivalCv() read the inner source's constants (the sources of this directory never change
// them). The prefetcher must be stopped or destroyed before the sources it serves.
#ifndef SLUICE_SIM_WORKLOAD_PREFETCH_H_
#define SLUICE_SIM_WORKLOAD_PREFETCH_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/time.h"

#include "sim/workload/arrivals.h"

namespace sluice::sim {

class ArrivalPrefetcher;

class PrefetchedSource final : public ArrivalSource {
 public:
  // Next() use. `inner` must not be null. The ring holds about kAheadSeconds of the source's
  // mean rate (kCapacity to kMaxCapacity items): a fluid batch takes up to a minute of a busy
  // function's arrivals at once, which a small ring cannot hold between two helper passes.
  explicit PrefetchedSource(std::unique_ptr<ArrivalSource> inner);
  // DrawCount use over the grid above (step > 0, start <= end); DrawCount must then be asked for
  // exactly those windows in order, and Next() never (SLUICE_CHECKed).
  PrefetchedSource(std::unique_ptr<ArrivalSource> inner, absl::Time start, absl::Duration step,
                   absl::Time end);

  std::optional<Arrival> Next() override;
  std::optional<int64_t> DrawCount(absl::Time from, absl::Time to) override;
  double MeanRate() const override { return inner_->MeanRate(); }
  double InterArrivalCv() const override { return inner_->InterArrivalCv(); }
  uint64_t capacity() const { return capacity_; }  // the ring's size

 private:
  friend class ArrivalPrefetcher;
  static constexpr uint64_t kCapacity = 128;      // the least ring size (a power of two)
  static constexpr uint64_t kMaxCapacity = 16384;  // the most (Next() use)
  static constexpr double kAheadSeconds = 32;
  struct Item {
    Arrival arrival;
    int64_t count = 0;
    bool has = false;  // Next() use: false = exhausted
  };
  // Producer: fills the free slots of the ring; whether it produced anything.
  bool Fill();
  // Producer: Fill() once the ring is down to half; whether it produced anything.
  bool Refill();
  // Fill() if no other thread holds the producer's role (`*filled`: this call held it); whether
  // it produced anything.
  bool TryFill(bool* filled);
  // Consumer: the next item; an empty ring is filled here (TryFill), or waited for while the
  // helper is filling it.
  Item Take();

  const std::unique_ptr<ArrivalSource> inner_;
  const bool counts_;
  const absl::Time start_;
  const absl::Duration step_;
  const absl::Time end_;
  // Producer only (whoever holds producing_).
  absl::Time produce_from_;
  bool done_ = false;
  // Consumer only.
  absl::Time take_from_;
  bool exhausted_ = false;
  ArrivalPrefetcher* owner_ = nullptr;  // set by ArrivalPrefetcher::Add
  std::atomic<uint64_t> head_{0};       // items taken (written by the consumer)
  std::atomic<uint64_t> tail_{0};       // items produced (written by the producer)
  std::atomic<bool> producing_{false};  // a thread holds the producer's role (in Fill)
  const uint64_t capacity_;  // a power of two
  std::vector<Item> items_;  // the ring: items_[k % capacity_]
};

// One helper thread filling the rings of its sources, round-robin, sleeping while all are full.
class ArrivalPrefetcher {
 public:
  ArrivalPrefetcher() = default;
  ArrivalPrefetcher(const ArrivalPrefetcher&) = delete;
  ArrivalPrefetcher& operator=(const ArrivalPrefetcher&) = delete;
  ~ArrivalPrefetcher() { Stop(); }

  // Before Start(): `source` is served by the helper from then on (it must outlive Stop()).
  void Add(PrefetchedSource* source);
  void Start();
  // Joins the helper; idempotent. Sources keep working afterwards only for what was produced.
  void Stop();

 private:
  friend class PrefetchedSource;
  void Loop();
  void Wake();            // the consumer waits or freed room: make sure the helper runs
  void WakeIfSleeping();  // cheap when the helper is busy

  std::vector<PrefetchedSource*> sources_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wake_ = false;  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_PREFETCH_H_
