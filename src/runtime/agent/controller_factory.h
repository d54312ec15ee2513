// MakeGpuController: the vertical controller a token server runs, by name. "dilu" (default):
// Dilu's fast scale-up/down controller (core/dilu), the class the simulator runs; "static":
// every instance at its limit (core/baselines, the MPS-like baselines); "request": every
// instance at its request (Dilu's -VS ablation). Thread-compatible.
#ifndef SLUICE_RUNTIME_AGENT_CONTROLLER_FACTORY_H_
#define SLUICE_RUNTIME_AGENT_CONTROLLER_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/policy/vertical.h"

namespace sluice::runtime {

// InvalidArgument for an unknown name.
absl::StatusOr<std::unique_ptr<core::VerticalController>> MakeGpuController(
    const std::string& name, absl::Duration period);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_CONTROLLER_FACTORY_H_
