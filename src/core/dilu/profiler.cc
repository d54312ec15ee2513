// Profiler: binary search (training), Hybrid Growth Search and traversal (inference) over a
// memoising trial runner that counts distinct trials.
#include "core/dilu/profiler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {
namespace {

// Runs each <SM units, batch> trial once; SM shares are integer multiples of `unit`.
class CachedRunner {
 public:
  CachedRunner(TrialRunner& runner, double unit) : runner_(runner), unit_(unit) {}

  int UnitsOf(double share) const { return static_cast<int>(std::lround(share / unit_)); }
  double ShareOf(int units) const { return std::min(1.0, units * unit_); }

  absl::StatusOr<TrialResult> Run(int units, int batch) {
    auto it = cache_.find({units, batch});
    if (it != cache_.end())
      return it->second;
    SLUICE_ASSIGN_OR_RETURN(TrialResult r, runner_.Run(Trial{ShareOf(units), batch}));
    if (!(r.latency > absl::ZeroDuration()) || r.latency == absl::InfiniteDuration() ||
        !(r.throughput >= 0) || !std::isfinite(r.throughput)) {
      return absl::InvalidArgumentError(
          absl::StrCat("trial runner returned latency ", absl::FormatDuration(r.latency),
                       ", throughput ", r.throughput, " at SM ", ShareOf(units), " batch ", batch));
    }
    memory_ = std::max(memory_, r.memory);
    cache_.emplace(std::make_pair(units, batch), r);
    return r;
  }
  int trials() const { return static_cast<int>(cache_.size()); }
  Bytes memory() const { return memory_; }

 private:
  TrialRunner& runner_;
  double unit_;
  absl::flat_hash_map<std::pair<int, int>, TrialResult> cache_;
  Bytes memory_;
};

// Binary search for the smallest SM share reaching p * T1 (see profiler.h). Returns grid units.
absl::StatusOr<int> SearchShare(CachedRunner& runner, int full_units, double t1, double p,
                                double tolerance) {
  const double target = p * t1;
  int lo = 0;
  int hi = full_units;  // T(100 %) = T1 >= p T1
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    SLUICE_ASSIGN_OR_RETURN(TrialResult r, runner.Run(mid, 1));
    if (std::abs(r.throughput - target) <= tolerance * target)
      return mid;
    if (r.throughput < target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hi;
}

double Te(int batch, const TrialResult& r, double share) {
  return batch / (absl::ToDoubleSeconds(r.latency) * share);
}

// SM levels of the inference grid: sm_step, 2 sm_step, ..., 1.0 (in `runner` units).
std::vector<int> InferenceLevels(const CachedRunner& runner, double step) {
  std::vector<int> levels;
  for (int k = 1;; ++k) {
    const double share = std::min(1.0, k * step);
    levels.push_back(runner.UnitsOf(share));
    if (share >= 1.0 - 1e-9)
      break;
  }
  return levels;
}

struct Point {
  int batch = 0;
  int level = -1;  // index into the levels
  TrialResult result;
  double te = 0;
};

Profile Finish(const Point& best, const std::vector<int>& levels, const CachedRunner& runner,
               double limit_factor) {
  Profile p;
  const double request = runner.ShareOf(levels[best.level]);
  p.quota = {request, std::min(1.0, limit_factor * request)};
  p.batch = best.batch;
  p.latency = best.result.latency;
  p.throughput = best.batch / absl::ToDoubleSeconds(best.result.latency);
  p.memory = runner.memory();
  p.trials = runner.trials();
  return p;
}

absl::Status SloMissed(absl::Duration slo) {
  return absl::FailedPreconditionError(
      absl::StrCat("batch 1 misses the execution-time target even at 100 % SM (SLO ",
                   absl::FormatDuration(slo), ")"));
}

}  // namespace

absl::StatusOr<Profiler> Profiler::Create(const ProfilerConfig& c) {
  const bool ok = c.request_fraction > 0 && c.request_fraction <= c.limit_fraction &&
                  c.limit_fraction <= 1 && c.tolerance >= 0 && c.tolerance < 1 && c.sm_unit > 0 &&
                  c.sm_unit <= c.sm_step && c.sm_step <= 1 && c.max_batch >= 1 &&
                  c.slo_fraction > 0 && c.slo_fraction <= 1 && c.limit_factor >= 1 &&
                  c.te_tolerance >= 0 && c.te_tolerance < 1;
  if (!ok)
    return absl::InvalidArgumentError("invalid profiler config (see profiler.h)");
  return Profiler(c);
}

absl::StatusOr<Profile> Profiler::ProfileTraining(TrialRunner& trial_runner) const {
  CachedRunner runner(trial_runner, config_.sm_unit);
  const int full = runner.UnitsOf(1.0);
  SLUICE_ASSIGN_OR_RETURN(TrialResult exclusive, runner.Run(full, 1));
  const double t1 = exclusive.throughput;
  if (!(t1 > 0))
    return absl::FailedPreconditionError("exclusive training throughput is zero");
  SLUICE_ASSIGN_OR_RETURN(
      int req, SearchShare(runner, full, t1, config_.request_fraction, config_.tolerance));
  SLUICE_ASSIGN_OR_RETURN(int lim,
                          SearchShare(runner, full, t1, config_.limit_fraction, config_.tolerance));
  Profile p;
  p.quota.request = runner.ShareOf(std::max(req, 1));
  p.quota.limit = runner.ShareOf(std::max({lim, req, 1}));
  p.throughput = t1;
  p.latency = exclusive.latency;
  p.memory = runner.memory();
  p.trials = runner.trials();
  return p;
}

absl::StatusOr<Profile> Profiler::ProfileInference(TrialRunner& trial_runner,
                                                   absl::Duration slo) const {
  CachedRunner runner(trial_runner, std::min(config_.sm_unit, config_.sm_step));
  const std::vector<int> levels = InferenceLevels(runner, config_.sm_step);
  const absl::Duration target = slo * config_.slo_fraction;
  const int top = static_cast<int>(levels.size()) - 1;
  // Lowest feasible level >= `from` for `batch`. Gives up (returning an infeasible point) at the
  // top level or once the TE of an infeasible point is <= `bar`: more SMR only lowers TE.
  auto grow = [&](int batch, int from, double bar) -> absl::StatusOr<Point> {
    Point pt{batch, from, {}, 0};
    for (;; ++pt.level) {
      SLUICE_ASSIGN_OR_RETURN(pt.result, runner.Run(levels[pt.level], batch));
      pt.te = Te(batch, pt.result, runner.ShareOf(levels[pt.level]));
      if (pt.result.latency <= target || pt.level == top || pt.te <= bar)
        return pt;
    }
  };
  SLUICE_ASSIGN_OR_RETURN(Point last, grow(1, 0, 0.0));
  if (last.result.latency > target)
    return SloMissed(slo);
  Point best = last;
  for (int batch = 2; batch <= config_.max_batch; batch *= 2) {
    const double bar = (1.0 - config_.te_tolerance) * last.te;
    SLUICE_ASSIGN_OR_RETURN(Point next, grow(batch, last.level, bar));
    if (next.result.latency > target || !(next.te > bar))
      break;
    last = next;
    if (last.te > best.te)
      best = last;
  }
  return Finish(best, levels, runner, config_.limit_factor);
}

absl::StatusOr<Profile> Profiler::TraverseInference(TrialRunner& trial_runner,
                                                    absl::Duration slo) const {
  CachedRunner runner(trial_runner, std::min(config_.sm_unit, config_.sm_step));
  const std::vector<int> levels = InferenceLevels(runner, config_.sm_step);
  const absl::Duration target = slo * config_.slo_fraction;
  Point best;
  for (int batch = 1; batch <= config_.max_batch; batch *= 2) {
    for (int level = 0; level < static_cast<int>(levels.size()); ++level) {
      SLUICE_ASSIGN_OR_RETURN(TrialResult r, runner.Run(levels[level], batch));
      if (r.latency > target)
        continue;
      const double te = Te(batch, r, runner.ShareOf(levels[level]));
      if (best.level < 0 || te > best.te)
        best = Point{batch, level, r, te};
    }
  }
  if (best.level < 0)
    return SloMissed(slo);
  return Finish(best, levels, runner, config_.limit_factor);
}

}  // namespace sluice::core
