// The thread-local slot behind ScopedSampleObserver.
#include "sim/engine/sample_observer.h"

namespace sluice::sim {
namespace {

thread_local const SampleObserver* current_observer = nullptr;

}  // namespace

const SampleObserver* CurrentSampleObserver() { return current_observer; }

ScopedSampleObserver::ScopedSampleObserver(const SampleObserver* observer)
    : previous_(current_observer) {
  current_observer = observer;
}

ScopedSampleObserver::~ScopedSampleObserver() { current_observer = previous_; }

}  // namespace sluice::sim
