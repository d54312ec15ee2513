// FunctionState: the lifecycle of a deployed function in the controller's registry, with its
// YAML/JSON spelling and the allowed transitions. Used by the registry records, the admin API and
// the routes. Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_CONTROLLER_FUNCTION_STATE_H_
#define SLUICE_RUNTIME_CONTROLLER_FUNCTION_STATE_H_

#include <optional>
#include <string>

namespace sluice::runtime {

// States and transitions (docs/platform.md):
//   kProfiling -> kReady      the profiler (or, with a spec quota, one capacity trial) succeeded
//   kProfiling -> kFailed     a trial failed, or the SLO is not met at 100 % SM (message says so)
//   kProfiling -> kDeleting   deleted while profiling (the trial's result is dropped)
//   kReady     -> kDeleting   DELETE /admin/v1/functions/{name}: instances drained and stopped
//   kFailed    -> kDeleting   deleting a failed function
//   kDeleting  -> (gone)      the record is erased from the store
// A restart of the controller keeps the state; a function found in kProfiling is profiled again.
enum class FunctionState { kProfiling, kReady, kFailed, kDeleting };

// "profiling", "ready", "failed", "deleting".
const char* FunctionStateName(FunctionState state);
// The state named `name`, or nullopt.
std::optional<FunctionState> ParseFunctionState(const std::string& name);
// True when `from -> to` is one of the transitions above.
bool CanTransition(FunctionState from, FunctionState to);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_FUNCTION_STATE_H_
