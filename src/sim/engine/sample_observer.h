// Progress display hook (issue 14: `sluice sim run` on a terminal): an observer the engine calls
// at each sample (every SimConfig::sample_interval of virtual time) with the virtual time since
// the run's start and the events run so far. Set per thread for a scope (ScopedSampleObserver) by
// src/sim/cli; it must not touch the run, and results never depend on it. Kept out of SimConfig
// so that adding it did not rebuild every simulator file; a SimConfig member would do as well.
// Thread safety: the observer is thread-local, so concurrent RunSimulation calls on other
// threads never see it.
#ifndef SLUICE_SIM_ENGINE_SAMPLE_OBSERVER_H_
#define SLUICE_SIM_ENGINE_SAMPLE_OBSERVER_H_

#include <cstdint>
#include <functional>

#include "absl/time/time.h"

namespace sluice::sim {

using SampleObserver = std::function<void(absl::Duration elapsed, int64_t events)>;

// The observer set on this thread, or null.
const SampleObserver* CurrentSampleObserver();

// Sets `observer` (borrowed; must outlive this) on this thread for this object's lifetime and
// restores the previous one on destruction.
class ScopedSampleObserver {
 public:
  explicit ScopedSampleObserver(const SampleObserver* observer);
  ~ScopedSampleObserver();
  ScopedSampleObserver(const ScopedSampleObserver&) = delete;
  ScopedSampleObserver& operator=(const ScopedSampleObserver&) = delete;

 private:
  const SampleObserver* previous_;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_SAMPLE_OBSERVER_H_
