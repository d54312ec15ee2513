// Function groups: a `functions:` entry `{function_group: {...}}` expands into `count` inference
// functions (up to 100,000) with a model mix and long-tail arrivals fitted to the Azure Functions
// 2019 trace (sim/workload/longtail.h). Schema in docs/experiments.md and docs/longtail.md.
// Called by the experiment loader's functions section. Stateless; thread-compatible.
#ifndef SLUICE_SIM_EXPERIMENT_FUNCTION_GROUP_H_
#define SLUICE_SIM_EXPERIMENT_FUNCTION_GROUP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

#include "sim/experiment/loader_internal.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim::internal {

// True when `functions[i]` is a group entry (a map with a `function_group` key).
bool IsFunctionGroup(const YAML::Node& item);

// Parses `functions[index]` = {function_group: {name, count, models, seed, rate_scale,
// diurnal_amplitude, diurnal_peak_h}}. Each `models[j]` is a function entry without `name` and
// `workload`, plus `weight` (> 0, default 1); it is parsed once (profiling once per model
// entry), and every generated function copies it. Function k is named "<name>-<k>" (zero
// padded) and gets model entry j with probability weight_j / sum of weights, and the k-th
// function of GenerateLongTailFleet(count, seed) as its workload. `seed` defaults to
// `experiment_seed`. Errors name file, line and field (`functions[i].function_group.models[j].
// slo_ms`). Generated functions carry no profile record (their quota is the model entry's).
absl::StatusOr<std::vector<ParsedFunction>> ParseFunctionGroup(const YAML::Node& item, int index,
                                                               const LoadContext& ctx,
                                                               uint64_t experiment_seed);

}  // namespace sluice::sim::internal

#endif  // SLUICE_SIM_EXPERIMENT_FUNCTION_GROUP_H_
