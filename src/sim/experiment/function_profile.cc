// ProfileFunction: core::Profiler over a recording wrapper of core::PerfModelTrialRunner.
#include "sim/experiment/function_profile.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/dilu/perf_trial_runner.h"

namespace sluice::sim {
namespace {

using core::FunctionKind;

// Logs every trial; with `pinned_batch` > 0 runs each trial at that batch whatever the profiler
// asked (the profiler is then configured with max_batch 1, so it only ever asks for batch 1).
class RecordingRunner final : public core::TrialRunner {
 public:
  RecordingRunner(core::TrialRunner& inner, int pinned_batch, std::vector<TrialRecord>& log)
      : inner_(inner), pinned_batch_(pinned_batch), log_(log) {}

  absl::StatusOr<core::TrialResult> Run(const core::Trial& trial) override {
    core::Trial t = trial;
    if (pinned_batch_ > 0)
      t.batch = pinned_batch_;
    SLUICE_ASSIGN_OR_RETURN(core::TrialResult r, inner_.Run(t));
    log_.push_back({t.sm_share, t.batch, r.latency, r.throughput});
    return r;
  }

 private:
  core::TrialRunner& inner_;
  int pinned_batch_;
  std::vector<TrialRecord>& log_;
};

absl::Status CheckTarget(const ProfileTarget& t) {
  if (t.kind == FunctionKind::kTraining) {
    if (t.method == ProfileMethod::kTraversal) {
      return absl::InvalidArgumentError(
          "the traversal baseline is for inference; training uses binary search");
    }
    return absl::OkStatus();
  }
  if (!(t.slo > absl::ZeroDuration()) || t.slo == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("the SLO must be positive and finite");
  }
  if (t.fixed_batch.has_value() && *t.fixed_batch < 1) {
    return absl::InvalidArgumentError("the batch must be >= 1");
  }
  if (t.kind == FunctionKind::kLlmInference && (t.output_tokens < 1 || t.prompt_tokens < 0)) {
    return absl::InvalidArgumentError("LLM output tokens must be >= 1 and prompt tokens >= 0");
  }
  return absl::OkStatus();
}

// Requests/s of one instance at `share` and `batch`, served as the engine serves them.
double CapacityRps(const core::ModelEntry& model, const ProfileTarget& t, double share, int batch) {
  const core::LatencyModel& m = *model.latency;
  double seconds = absl::ToDoubleSeconds(m.BatchLatency(batch, share));
  if (t.kind == FunctionKind::kLlmInference) {
    seconds = absl::ToDoubleSeconds(m.PrefillLatency(t.prompt_tokens * batch, share)) +
              t.output_tokens * seconds;
  }
  return seconds > 0 ? batch / seconds : 0;
}

absl::StatusOr<core::Profile> Search(const core::Profiler& profiler, core::TrialRunner& runner,
                                     const ProfileTarget& t, absl::Duration slo) {
  if (t.kind == FunctionKind::kTraining)
    return profiler.ProfileTraining(runner);
  if (t.method == ProfileMethod::kTraversal)
    return profiler.TraverseInference(runner, slo);
  return profiler.ProfileInference(runner, slo);
}

}  // namespace

absl::StatusOr<FunctionProfile> ProfileFunction(const core::Profiler& profiler,
                                                const core::ModelEntry& model,
                                                const ProfileTarget& target) {
  SLUICE_RETURN_IF_ERROR(CheckTarget(target));
  const bool training = target.kind == FunctionKind::kTraining;
  const bool pinned = !training && target.fixed_batch.has_value();
  core::ProfilerConfig config = profiler.config();
  if (pinned)
    config.max_batch = 1;
  SLUICE_ASSIGN_OR_RETURN(const core::Profiler search, core::Profiler::Create(config));

  FunctionProfile out;
  out.profiled_slo =
      target.kind == FunctionKind::kLlmInference ? target.slo / target.output_tokens : target.slo;
  core::ModelEntry as_kind = model;  // the runner picks iteration vs batch time by the kind
  as_kind.info.kind = target.kind;
  core::PerfModelTrialRunner perf_runner(as_kind);
  RecordingRunner runner(perf_runner, pinned ? *target.fixed_batch : 0, out.log);
  absl::StatusOr<core::Profile> p = Search(search, runner, target, out.profiled_slo);
  if (absl::IsFailedPrecondition(p.status()) && !training) {
    return absl::FailedPreconditionError(
        absl::StrCat("no SM share meets ", search.config().slo_fraction, " x the SLO (",
                     absl::FormatDuration(out.profiled_slo * search.config().slo_fraction),
                     target.kind == FunctionKind::kLlmInference ? " per output token" : "",
                     ") at batch ", pinned ? *target.fixed_batch : 1, ", even the whole GPU"));
  }
  SLUICE_RETURN_IF_ERROR(p.status());
  out.quota = p->quota;
  out.trials = p->trials;
  if (!training) {
    out.batch = pinned ? *target.fixed_batch : p->batch;
    out.capacity_rps = CapacityRps(model, target, out.quota.request, out.batch);
  }
  return out;
}

}  // namespace sluice::sim
