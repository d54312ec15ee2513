// A seeded generator of instance lists shaped like Dilu's `service_generator.py` (the synthetic
// inputs of its 1,000-node placement study), for when the shipped lists are absent or another
// size or seed is wanted. Used by the placement experiment and tests. Pure; thread-safe.
//
// Per instance (draws uniform; shares rounded to 0.01 as the generator does):
//   training (count x 0.2): 2 or 4 GPUs on one node, memory 25/30/35/40 GiB per GPU,
//       request U(0.4, 0.8), limit max(request + 0.2, U(0.6, 1.0));
//   LLM inference (count x 0.2): 1 GPU, memory 20..30 GiB, request U(0.4, 0.6),
//       limit U(request + 0.2, 0.8);
//   other inference (the rest): 1 GPU, memory 3..10 GiB, request U(0.2, 0.4),
//       limit max(request + 0.2, U(0.3, 0.6)).
// The instances are shuffled and start one per second. count x 0.6 of the inference and LLM
// instances are deleted 1, 2 or 3 minutes after their start and count x 0.1 of the training
// instances 10..15 minutes after (so 70 % are deleted, as in the shipped lists). Service names
// are "<type>-<6 of [a-z0-9]>", unique. The same config gives the same events on every platform
// (sim::Rng), but not the same draws as Python's `random`.
#ifndef SLUICE_SIM_PLACEMENT_SYNTHETIC_INSTANCES_H_
#define SLUICE_SIM_PLACEMENT_SYNTHETIC_INSTANCES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

#include "sim/placement/instance_list.h"

namespace sluice::sim {

struct SyntheticInstancesConfig {
  int count = 3200;  // instances, in [1, 1000000]
  uint64_t seed = 1;
};

// Events in time order (starts before deletes at the same second), checked by
// OrderAndCheckEvents. InvalidArgument when count is out of range.
absl::StatusOr<std::vector<PlacementEvent>> GenerateSyntheticInstances(
    const SyntheticInstancesConfig& config);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_SYNTHETIC_INSTANCES_H_
