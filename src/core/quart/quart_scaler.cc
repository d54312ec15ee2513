// QUART's per-pipeline scaling policy (see quart_scaler.h).
#include "core/quart/quart_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/quart/budget_rebalancer.h"
#include "core/quart/cv_propagation.h"
#include "core/quart/mmc_model.h"

namespace sluice::core {
namespace {

absl::Status StageError(size_t i, absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("field 'stages[", i, "].", field, "': ", message));
}

absl::Status Prefixed(absl::string_view prefix, const absl::Status& s) {
  if (s.ok())
    return s;
  std::string m(s.message());
  const size_t at = m.find("field '");
  if (at != std::string::npos)
    m.insert(at + 7, absl::StrCat(prefix, "."));
  return absl::InvalidArgumentError(m);
}

// The compensator names "profiles[i].x" (one profile per stage) or "max_duration"; the
// scaler's caller wrote "stages[i].cpu.x" and "cpu.max_duration".
absl::Status CpuError(const absl::Status& s) {
  std::string m(s.message());
  const std::string from = "field 'profiles[";
  const size_t at = m.find(from);
  if (at == std::string::npos)
    return Prefixed("cpu", s);
  m.replace(at, from.size(), "field 'stages[");
  const size_t close = m.find("].", at);
  if (close != std::string::npos)
    m.insert(close + 2, "cpu.");
  return absl::InvalidArgumentError(m);
}

absl::Status ValidateStage(size_t i, const QuartStageSpec& s) {
  if (!(s.service_rps > 0) || !std::isfinite(s.service_rps)) {
    return StageError(i, "service_rps", "must be finite and > 0");
  }
  if (!(s.service_cv >= 0) || !std::isfinite(s.service_cv)) {
    return StageError(i, "service_cv", "must be finite and >= 0");
  }
  if (s.min_replicas < 0)
    return StageError(i, "min_replicas", "must be >= 0");
  if (s.max_replicas < std::max(1, s.min_replicas)) {
    return StageError(i, "max_replicas", "must be >= max(1, min_replicas)");
  }
  if (s.latency_target <= absl::Seconds(1.0 / s.service_rps) ||
      s.latency_target == absl::InfiniteDuration()) {
    return StageError(i, "latency_target", "must be finite and above the service time 1/mu");
  }
  return absl::OkStatus();
}

absl::Status ValidateRebalance(const QuartConfig& c) {
  if (c.rebalance && c.total_replicas <= 0) {
    return absl::InvalidArgumentError(
        "field 'rebalance': needs total_replicas > 0 (there is no budget to rebalance under)");
  }
  if (!(c.rebalance_headroom >= 1) || !std::isfinite(c.rebalance_headroom)) {
    return absl::InvalidArgumentError("field 'rebalance_headroom': must be finite and >= 1");
  }
  if (c.rebalance_cooldown < absl::ZeroDuration() ||
      c.rebalance_cooldown == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("field 'rebalance_cooldown': must be finite and >= 0");
  }
  return absl::OkStatus();
}

// A measured rate as a load: a non-finite or negative one counts as 0.
double CleanRate(double rps) {
  return std::isfinite(rps) ? std::max(0.0, rps) : 0.0;
}

// The stable floor floor(rps / mu) + 1 at a clean rate, capped at max_replicas (in double first:
// an absurd rate must not overflow the int); 0 when idle.
int StableFloor(double rps, const QuartStageSpec& spec) {
  return rps > 0 ? static_cast<int>(std::min<double>(std::floor(rps / spec.service_rps) + 1,
                                                     spec.max_replicas))
                 : 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<QuartScaler>> QuartScaler::Create(const QuartConfig& config) {
  if (config.stages.empty())
    return absl::InvalidArgumentError("field 'stages': must not be empty");
  if (config.period <= absl::ZeroDuration() || config.period == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("field 'period': must be finite and > 0");
  }
  const double f = config.correction_bound_factor;
  if (!std::isfinite(f) || !(f == 0 || f >= 1)) {
    return absl::InvalidArgumentError("field 'correction_bound_factor': must be 0 or >= 1");
  }
  if (config.total_replicas < 0)
    return absl::InvalidArgumentError("field 'total_replicas': must be >= 0");
  SLUICE_RETURN_IF_ERROR(ValidateRebalance(config));
  std::vector<CpuStageProfile> profiles;
  for (size_t i = 0; i < config.stages.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(ValidateStage(i, config.stages[i]));
    profiles.push_back(config.stages[i].cpu);
  }
  SLUICE_RETURN_IF_ERROR(Prefixed("key", ValidateKeyStageConfig(config.key)));
  auto pid = PidCorrector::Create(config.pid);
  if (!pid.ok())
    return Prefixed("pid", pid.status());
  const int n = static_cast<int>(config.stages.size());
  auto smoother = ReplicaSmoother::Create(config.smoother, n);
  if (!smoother.ok())
    return Prefixed("smoother", smoother.status());
  auto cpu = CpuCompensator::Create(config.cpu, std::move(profiles));
  if (!cpu.ok())
    return CpuError(cpu.status());
  std::vector<PidCorrector> pids(n, *pid);
  return std::unique_ptr<QuartScaler>(
      new QuartScaler(config, std::move(pids), std::move(*smoother), std::move(*cpu)));
}

void QuartScaler::Observe(const std::vector<StageSample>& samples, absl::Time now) {
  if (samples.size() != config_.stages.size()) {
    ++rejected_samples_;
    return;
  }
  samples_ = samples;
  fresh_ = true;
}

int QuartScaler::Total(int i) const {
  if (samples_.empty())
    return 0;
  return std::max(0, samples_[i].ready_replicas) + std::max(0, samples_[i].starting_replicas);
}

std::vector<double> QuartScaler::SizingCvs(const std::vector<StageEstimate>& est) const {
  std::vector<StageCvInput> in;
  for (size_t i = 0; i < est.size(); ++i) {
    const double rho = est[i].model.utilisation;
    in.push_back({std::isfinite(rho) ? rho : 1.0, config_.stages[i].service_cv,
                  std::max(1, samples_[i].ready_replicas)});
  }
  std::vector<double> cvs = PredictStageCvs(samples_[0].arrival_cv, in);
  for (size_t i = 0; i < cvs.size(); ++i) {
    const double measured = samples_[i].arrival_cv;
    if (std::isfinite(measured))
      cvs[i] = std::max(cvs[i], measured);
  }
  return cvs;
}

void QuartScaler::Correct(const std::vector<StageEstimate>& est, absl::Duration dt,
                          QuartDecision& d) {
  for (size_t i = 0; i < est.size(); ++i) {
    const QuartStageSpec& spec = config_.stages[i];
    const double error =
        absl::FDivDuration(est[i].latency - spec.latency_target, spec.latency_target);
    // Anti-windup: while replicas it asked for are still starting, do not integrate the wait.
    const double out = pids_[i].Update(error, dt, samples_[i].starting_replicas > 0);
    if (!(est[i].latency > spec.latency_target))
      continue;
    // The PID output is the correction over the ready replicas; those already starting are
    // part of it (else every window of a cold start would ask for the same replicas again).
    // The G/G/c need bounds it, plus one probing replica when nothing is starting, for latency
    // the model does not explain (docs/quart.md, "Corrector": the bare PID overshoots an
    // overload by up to kp x error_limit replicas per window).
    const int starting = std::max(0, samples_[i].starting_replicas);
    const int total = Total(static_cast<int>(i));
    const int need =
        ReplicasForTarget(samples_[i].arrival_rps, spec.service_rps, spec.latency_target,
                          spec.max_replicas, d.stages[i].predicted_cv, spec.service_cv);
    const double factor = config_.correction_bound_factor;
    const int bound = static_cast<int>(std::ceil(factor * need - 1e-9));
    const int cap = std::max(0, bound - total) + (starting > 0 ? 0 : 1);
    int up = std::max(0, static_cast<int>(std::ceil(out - 1e-9)) - starting);
    if (factor > 0)
      up = std::min(up, cap);
    d.stages[i].replica_delta = std::min(up, spec.max_replicas - total);
  }
}

void QuartScaler::Smooth(const std::vector<StageEstimate>& est, absl::Time now, QuartDecision& d) {
  const int n = static_cast<int>(est.size());
  std::vector<SmoothInput> in(n);
  absl::Duration upstream = absl::ZeroDuration();
  for (int i = 0; i < n; ++i) {
    const QuartStageSpec& spec = config_.stages[i];
    const StageSample& s = samples_[i];
    SmoothInput& x = in[i];
    // A stage scaling up this round has no surplus: 0 replicas stops its smoothing clock.
    x.replicas = d.stages[i].replica_delta > 0 ? 0 : Total(i);
    x.min_replicas = spec.min_replicas;
    x.stable_floor = StableFloor(CleanRate(s.arrival_rps), spec);
    x.demand = ReplicasForTarget(s.arrival_rps, spec.service_rps, spec.latency_target,
                                 spec.max_replicas, d.stages[i].predicted_cv, spec.service_cv);
    x.predicted_cv = d.stages[i].predicted_cv;
    x.upstream_delay = upstream;
    upstream += est[i].latency;
  }
  const std::vector<int> reclaim = smoother_.Reclaim(in, now);
  for (int i = 0; i < n; ++i) {
    if (reclaim[i] > 0)
      d.stages[i].replica_delta = -reclaim[i];
  }
}

void QuartScaler::Compensate(int free_cpu_cores, absl::Time now, QuartDecision& d) {
  std::vector<CpuStageView> views(config_.stages.size());
  for (size_t i = 0; i < views.size(); ++i) {
    const StageSample& s = samples_[i];
    CpuStageView& v = views[i];
    v.arrival_rps = s.arrival_rps;
    v.service_rps = config_.stages[i].service_rps;
    // Replicas being drained this round no longer serve.
    v.ready_replicas = std::max(0, s.ready_replicas + std::min(0, d.stages[i].replica_delta));
    v.cpu_workers = std::max(0, s.cpu_workers);
    v.target = config_.stages[i].latency_target;
    v.arrival_cv = d.stages[i].predicted_cv;
  }
  for (const CpuAction& a : cpu_.Decide(views, free_cpu_cores, now)) {
    StageDecision& sd = d.stages[a.stage];
    sd.cpu_worker_delta = a.worker_delta;
    sd.cpu_escalated = a.escalate;
    if (!a.escalate)
      continue;
    // Algorithm 1 line 21: the CPU cannot cover it, so the stage scales on GPUs. Replicas
    // already starting count toward the shortfall.
    const int more = a.gpu_replicas_short - std::max(0, samples_[a.stage].starting_replicas);
    sd.replica_delta = std::max(sd.replica_delta, more);
  }
}

QuartDecision QuartScaler::Decide(absl::Time now, int free_cpu_cores) {
  const int n = static_cast<int>(config_.stages.size());
  QuartDecision d;
  d.stages.resize(n);
  const absl::Time previous = last_decision_;
  last_decision_ = now;
  if (!fresh_)
    return d;  // nothing new since the last decision: every delta 0
  fresh_ = false;
  std::vector<StageLoad> loads(n);
  for (int i = 0; i < n; ++i) {
    const StageSample& s = samples_[i];
    loads[i] = {s.arrival_rps, config_.stages[i].service_rps, std::max(0, s.ready_replicas),
                s.measured_latency, s.queue_length};
  }
  const std::vector<StageEstimate> est = EstimateStages(loads, config_.key);
  const std::vector<double> cvs = SizingCvs(est);
  for (int i = 0; i < n; ++i) {
    d.stages[i].key = est[i].key;
    d.stages[i].estimated_latency = est[i].latency;
    d.stages[i].predicted_cv = cvs[i];
  }
  d.key_stages = KeyStages(est);
  const absl::Duration dt =
      previous == absl::InfinitePast() ? absl::InfiniteDuration() : now - previous;
  Correct(est, dt, d);
  Smooth(est, now, d);
  Compensate(free_cpu_cores, now, d);
  const std::vector<int> asked = ClampToBounds(d);
  if (config_.total_replicas > 0)
    FitTotal(d);
  if (config_.rebalance)
    Rebalance(est, asked, now, d);
  for (int i = 0; i < n; ++i) {
    if (d.stages[i].replica_delta > 0)
      last_raised_[i] = now;
  }
  return d;
}

std::vector<int> QuartScaler::ClampToBounds(QuartDecision& d) const {
  std::vector<int> deltas(d.stages.size());
  for (size_t i = 0; i < d.stages.size(); ++i) {
    const QuartStageSpec& spec = config_.stages[i];
    const int total = Total(static_cast<int>(i));
    const int want =
        std::clamp(total + d.stages[i].replica_delta, spec.min_replicas, spec.max_replicas);
    d.stages[i].replica_delta = deltas[i] = want - total;
  }
  return deltas;
}

void QuartScaler::FitTotal(QuartDecision& d) const {
  const int n = static_cast<int>(config_.stages.size());
  std::vector<int> want(n);
  std::vector<double> floor(n);
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    want[i] = Total(i) + d.stages[i].replica_delta;
    sum += want[i];
    const double rps = CleanRate(samples_[i].arrival_rps);
    floor[i] = std::max(1.0, std::floor(rps / config_.stages[i].service_rps) + 1);
  }
  while (sum > config_.total_replicas) {
    int pick = -1;
    double most = -1;
    for (int i = 0; i < n; ++i) {
      const double per_floor = want[i] / floor[i];
      // Replicas that only bring a stage up to min_replicas are not cut.
      const bool cuttable = want[i] > config_.stages[i].min_replicas;
      if (d.stages[i].replica_delta > 0 && cuttable && per_floor > most) {
        most = per_floor;
        pick = i;
      }
    }
    if (pick < 0)
      return;  // only replicas already held: never drained to fit
    --want[pick];
    --d.stages[pick].replica_delta;
    --sum;
  }
}

// Replicas stage i needs at `rps` x rebalance_headroom: G/G/c at its predicted CV, at least
// its stable floor there.
int QuartScaler::RebalanceNeed(int i, double rps, double cv) const {
  const QuartStageSpec& spec = config_.stages[i];
  const double load = std::min(CleanRate(rps) * config_.rebalance_headroom, 1e9);
  return std::max(StableFloor(load, spec),
                  ReplicasForTarget(load, spec.service_rps, spec.latency_target,
                                    spec.max_replicas, cv, spec.service_cv));
}

// What each donor keeps. Own rate: its need at its arrival rate. From the entry
// (rebalance_from_entry): every stage's need at the pipeline's entry rate, InferLine's way,
// scaled down to R_total's shares when together they exceed it (largest shares first).
std::vector<int> QuartScaler::RebalanceNeeds(const QuartDecision& d) const {
  const int n = static_cast<int>(config_.stages.size());
  std::vector<int> need(n);
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    const double rps = config_.rebalance_from_entry
                           ? std::max(samples_[0].arrival_rps, samples_[i].arrival_rps)
                           : samples_[i].arrival_rps;
    need[i] = RebalanceNeed(i, rps, d.stages[i].predicted_cv);
    sum += need[i];
  }
  if (!config_.rebalance_from_entry || sum <= config_.total_replicas)
    return need;
  const double scale = static_cast<double>(config_.total_replicas) / static_cast<double>(sum);
  for (int i = 0; i < n; ++i) {
    need[i] = std::max({1, config_.stages[i].min_replicas,
                        static_cast<int>(std::floor(need[i] * scale))});
  }
  return need;
}

// RebalanceUnderBudget moves what donors hold beyond RebalanceNeeds to the stages FitTotal cut
// and, from the entry with the budget full, to the stages below their share as well.
void QuartScaler::Rebalance(const std::vector<StageEstimate>& est, const std::vector<int>& asked,
                            absl::Time now, QuartDecision& d) const {
  const int n = static_cast<int>(config_.stages.size());
  bool cut = false;
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    cut = cut || asked[i] > d.stages[i].replica_delta;
    sum += Total(i) + d.stages[i].replica_delta;
  }
  const bool to_share = config_.rebalance_from_entry && sum >= config_.total_replicas;
  if (!cut && !to_share)
    return;  // the budget did not bind this decision
  const std::vector<int> need = RebalanceNeeds(d);
  std::vector<RebalanceStage> in(n);
  for (int i = 0; i < n; ++i) {
    const QuartStageSpec& spec = config_.stages[i];
    const StageSample& s = samples_[i];
    const bool calm = !(est[i].latency > spec.latency_target) &&
                      s.queue_length <= std::max(1, s.ready_replicas);
    const bool settled = now - last_raised_[i] >= config_.rebalance_cooldown;
    const int want = to_share ? std::max(asked[i], need[i] - Total(i)) : asked[i];
    in[i] = {Total(i), d.stages[i].replica_delta, want, spec.min_replicas, need[i],
             calm && settled};
  }
  const std::vector<int> delta = RebalanceUnderBudget(in);
  for (int i = 0; i < n; ++i)
    d.stages[i].replica_delta = delta[i];
}

absl::Time QuartScaler::NextWakeup() const {
  absl::Time t = last_decision_ == absl::InfinitePast() ? absl::InfiniteFuture()
                                                        : last_decision_ + config_.period;
  return std::min({t, smoother_.NextWakeup(), cpu_.NextWakeup()});
}

}  // namespace sluice::core
