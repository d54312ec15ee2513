// Shared rules for the pipeline-stage policy sets (quart, inferline, cocktail): a stage's
// per-replica throughput and its latency budget from FunctionTraits / PipelineStageTraits, with
// the fallbacks each set documents. Pure functions; thread-safe.
#ifndef SLUICE_CORE_REGISTRY_STAGE_SIZING_H_
#define SLUICE_CORE_REGISTRY_STAGE_SIZING_H_

#include "absl/time/time.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

// A budget is never sized below this multiple of the bare service time 1 / mu: no number of
// replicas meets a budget at or below the service time, and sizing for it would ask for every
// replica allowed. 1.5 lets a request queue for half a service time.
inline constexpr double kMinBudgetOverService = 1.5;

// Requests/s one instance serves: f.capacity_rps when > 0; else, with a latency model,
// max_batch / BatchLatency(max_batch, 1.0); else 0 (unknown).
double StageThroughput(const FunctionTraits& f);

// The stage's latency budget: `target` when > 0 and finite; else slo / stages when the SLO is
// finite and > 0; else 4 / mu (or 1 s when mu is unknown). Then at least
// kMinBudgetOverService / mu when mu > 0. Always > 0 and finite.
absl::Duration StageTarget(absl::Duration target, absl::Duration slo, int stages, double mu);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_STAGE_SIZING_H_
