// Instance start/delete events for the placement replay: the event model, the parser of Dilu's
// simulator inputs (`instances-*.txt[.xz]`, one Python dict literal per line) and the checks
// that pair every delete with a live start. Used by the replay engine and the placement
// experiment. Pure functions; thread-safe.
//
// Identity (as in Dilu's simulator, which keys every GPU's instances by `service_name`): a
// delete releases the live instance with the same service_name; the rest of the delete's
// instance dict is parsed and checked for form but not used. A name may start again after its
// delete. Dilu's simulator silently ignores a delete of an unknown name ("Not found") and
// corrupts its books on a second start of a live name; we reject both (the shipped lists contain
// neither: every name starts once and every delete repeats its start verbatim).
#ifndef SLUICE_SIM_PLACEMENT_INSTANCE_LIST_H_
#define SLUICE_SIM_PLACEMENT_INSTANCE_LIST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "core/policy/placement.h"

namespace sluice::sim {

enum class InstanceAction { kStart, kDelete };

// One instance as the list describes it. SM shares are fractions of one GPU, per GPU.
struct InstanceSpec {
  std::string service_name;
  core::FunctionKind kind = core::FunctionKind::kInference;  // training|inference|llm-inference
  int gpus = 1;
  double sm_request = 0;
  double sm_limit = 0;
  double memory_gib = 0;  // per GPU (every entry of the list's `memory` is the same)
};

struct PlacementEvent {
  absl::Time time;
  InstanceAction action = InstanceAction::kStart;
  InstanceSpec instance;
  int line = 0;  // 1-based source line; 0 for generated events
};

// Field-level rules applied to each line:
//   Time       'YYYY-mm-dd HH:MM:SS' (UTC)
//   Action     'start' | 'delete'
//   Instance   dict with exactly service_name (non-empty string), type ('training' | 'inference'
//              | 'llm-inference'), gpu_num (int in [1, 64]), sm_requests and sm_limits (numbers,
//              0 < sm_requests <= sm_limits <= 1), memory (list of gpu_num numbers in (0, 1e6]
//              GiB, all equal).
// Top-level keys are exactly Time, Action, Instance. Blank lines are skipped. Errors are
// InvalidArgument "file:line: field 'Instance.gpu_num': message" (syntax errors name the column).
absl::StatusOr<std::vector<PlacementEvent>> ParseInstanceList(absl::string_view contents,
                                                              const std::string& file);

// Stable-sorts `events` by time (ties keep their order, as Python's sort does in Dilu's
// generator) and checks the identity rules above: a start of a name that is live, or a delete of a
// name that is not, is InvalidArgument naming `file` and the event's line. Events whose start
// is never deleted stay live to the end.
[[nodiscard]] absl::Status OrderAndCheckEvents(std::vector<PlacementEvent>& events,
                                               const std::string& file);

// Reads `path` (xz or plain, via ReadFileMaybeXz), parses it and applies OrderAndCheckEvents.
absl::StatusOr<std::vector<PlacementEvent>> LoadInstanceList(const std::string& path);

// "training", "inference" or "llm-inference".
absl::string_view InstanceKindName(core::FunctionKind kind);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_INSTANCE_LIST_H_
