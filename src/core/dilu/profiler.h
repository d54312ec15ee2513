// Dilu's multi-factor profiler (ASPLOS'25 §3.2): finds an instance's SM <request, limit> quota
// (and, for inference, its batch size) from pre-running trials. The simulator runs trials against
// the performance model, the runtime runs real ones; both through TrialRunner. Stateless apart
// from the config; a Profile call is not thread-safe with respect to its runner.
#ifndef SLUICE_CORE_DILU_PROFILER_H_
#define SLUICE_CORE_DILU_PROFILER_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "common/units.h"
#include "core/resource/cluster.h"

namespace sluice::core {

// One pre-running trial: the instance alone on a GPU at `sm_share`.
struct Trial {
  double sm_share = 1.0;  // (0, 1]
  int batch = 1;          // inference batch size; 1 for training
};

struct TrialResult {
  absl::Duration latency;  // inference: t_exec of one batch; training: one iteration. > 0
  double throughput = 0;   // inference: requests/s; training: iterations (or samples)/s
  Bytes memory;            // peak GPU memory seen; zero when unknown
};

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  virtual absl::StatusOr<TrialResult> Run(const Trial& trial) = 0;
};

struct ProfilerConfig {
  double request_fraction = 0.8;  // training: p for the request quota
  double limit_fraction = 1.0;    // training: p for the limit quota
  double tolerance = 0.02;        // training: stop within p T1 (1 +- tolerance)
  double sm_unit = 0.01;          // training: SM grid (1 % of the GPU) and stop width
  double sm_step = 0.10;          // inference: linear SMR growth (10 units)
  int max_batch = 32;             // inference: IBS doubles from 1 up to this
  double slo_fraction = 0.5;      // inference: feasible when t_exec <= slo_fraction * SLO
  double limit_factor = 2.0;      // inference: limit = min(1, limit_factor * request)
  double te_tolerance = 0.05;     // inference: accept a doubled IBS while TE > (1 - this) x last
};

struct Profile {
  SmQuota quota;
  int batch = 1;           // chosen IBS (inference); 1 for training
  double throughput = 0;   // inference: IBS / t_exec at the optimum; training: T1
  absl::Duration latency;  // inference: t_exec at the optimum; training: at 100 %
  Bytes memory;            // largest memory seen over the trials
  int trials = 0;          // distinct trials run (repeats are cached)
};

// Training (binary search over the SM share on a grid of `sm_unit`): T1 = throughput at 100 %;
// for p in {request_fraction (0.8), limit_fraction (1.0)}: low = 0, high = 100 %, mid = the grid
// point halfway; T(mid) < p T1 -> low = mid, else high = mid; stop when T(mid) is within
// p T1 (1 +- tolerance) and take mid, or when no grid point is left strictly between low and high
// and take high (the smallest share known to reach p T1). Both searches share one trial cache.
//
// Inference, Hybrid Growth Search over <SMR, IBS> (our reading of the paper's terse text, checked
// against Dilu's published HGSS.sh): TE = IBS / (t_exec * SMR); feasible means
// t_exec <= slo_fraction * SLO.
//   1. IBS = 1, SMR = sm_step; grow SMR by sm_step until feasible (none up to 100 %: the model
//      cannot meet the SLO, FailedPrecondition). This is the first best point.
//   2. Double IBS (up to max_batch). Start at the last accepted point's SMR (t_exec grows with
//      IBS, so a smaller SMR cannot be feasible) and grow SMR by sm_step until feasible. Accept
//      the point and double again while its TE > (1 - te_tolerance) x the last accepted TE;
//      otherwise, or when no SMR is feasible for this IBS, stop. The answer is the accepted point
//      with the highest TE. te_tolerance (5 %) lets the search cross measurement noise on the
//      convex TE surface; Dilu's HGSS.sh likewise continues unless efficiency drops by more than
//      a fixed margin. te_tolerance = 0 is the strict "double while TE improves".
// Within one IBS, TE falls as SMR grows whenever t_exec * SMR does not fall (any serial
// fraction), so the first feasible SMR is that IBS's optimum; for the same reason SMR growth stops
// early once the TE of the current (still infeasible) point is already below the acceptance bar.
// request = the best SMR, limit = min(1, limit_factor * request); throughput = IBS / t_exec there.
// Traversal baseline: every IBS in 1, 2, 4, ... max_batch times every SMR step (6 x 10 = 60).
class Profiler {
 public:
  // InvalidArgument unless 0 < fractions <= 1 with request_fraction <= limit_fraction,
  // 0 <= tolerance < 1, 0 < sm_unit <= sm_step <= 1, max_batch >= 1, 0 < slo_fraction <= 1,
  // limit_factor >= 1, 0 <= te_tolerance < 1.
  static absl::StatusOr<Profiler> Create(const ProfilerConfig& config);

  // FailedPrecondition when the exclusive throughput is not positive; runner errors pass through.
  absl::StatusOr<Profile> ProfileTraining(TrialRunner& runner) const;
  // Hybrid Growth Search. FailedPrecondition when IBS 1 misses the SLO even at 100 % SM.
  absl::StatusOr<Profile> ProfileInference(TrialRunner& runner, absl::Duration slo) const;
  // Traversal baseline: every <IBS, SMR> pair; same errors.
  absl::StatusOr<Profile> TraverseInference(TrialRunner& runner, absl::Duration slo) const;

  const ProfilerConfig& config() const { return config_; }

 private:
  explicit Profiler(const ProfilerConfig& config) : config_(config) {}
  ProfilerConfig config_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_PROFILER_H_
