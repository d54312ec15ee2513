// FunctionState names and the transition table documented in function_state.h.
#include "runtime/controller/function_state.h"

namespace sluice::runtime {

const char* FunctionStateName(FunctionState state) {
  switch (state) {
    case FunctionState::kProfiling:
      return "profiling";
    case FunctionState::kReady:
      return "ready";
    case FunctionState::kFailed:
      return "failed";
    case FunctionState::kDeleting:
      return "deleting";
  }
  return "unknown";
}

std::optional<FunctionState> ParseFunctionState(const std::string& name) {
  for (FunctionState s : {FunctionState::kProfiling, FunctionState::kReady, FunctionState::kFailed,
                          FunctionState::kDeleting}) {
    if (name == FunctionStateName(s))
      return s;
  }
  return std::nullopt;
}

bool CanTransition(FunctionState from, FunctionState to) {
  switch (from) {
    case FunctionState::kProfiling:
      return to == FunctionState::kReady || to == FunctionState::kFailed ||
             to == FunctionState::kDeleting;
    case FunctionState::kReady:
    case FunctionState::kFailed:
      return to == FunctionState::kDeleting;
    case FunctionState::kDeleting:
      return false;
  }
  return false;
}

}  // namespace sluice::runtime
