// Progress formatting and run-boundary detection for `sim run`.
#include "sim/cli/sim_progress.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"

namespace sluice::sim {
namespace {

std::string Rate(double per_s) {
  if (per_s >= 1e6) return absl::StrFormat("%.2fM", per_s / 1e6);
  if (per_s >= 1e3) return absl::StrFormat("%.1fk", per_s / 1e3);
  return absl::StrFormat("%.0f", per_s);
}

std::string Clock(absl::Duration d) {
  const int64_t s = std::max<int64_t>(0, absl::ToInt64Seconds(d));
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

}  // namespace

std::string FormatSimProgress(const SimProgress& p) {
  const int total = std::max(1, p.runs_total);
  const int current = std::min(p.runs_done + 1, total);
  const double horizon_s = absl::ToDoubleSeconds(p.horizon);
  const double elapsed_s = std::min(absl::ToDoubleSeconds(p.sim_elapsed), horizon_s);
  const double wall_s = absl::ToDoubleSeconds(p.wall);
  const double fraction =
      (p.runs_done + (horizon_s > 0 ? elapsed_s / horizon_s : 0.0)) / static_cast<double>(total);
  const std::string eta =
      fraction > 0 && fraction < 1 ? Clock(absl::Seconds(wall_s * (1 - fraction) / fraction))
                                   : (fraction >= 1 ? "0:00" : "?");
  return absl::StrFormat("run %d/%d  sim %.0f/%.0f s  %s events/s  ETA %s", current, total,
                         elapsed_s, horizon_s,
                         wall_s > 0 ? Rate(static_cast<double>(p.events) / wall_s) : "-", eta);
}

SimProgressMeter::SimProgressMeter(std::ostream& out, std::function<absl::Time()> wall_clock,
                                   int runs_total, absl::Duration horizon)
    : line_(out), clock_(std::move(wall_clock)), start_(clock_()) {
  p_.runs_total = runs_total;
  p_.horizon = horizon;
}

void SimProgressMeter::OnSample(absl::Duration elapsed, int64_t events) {
  if (elapsed < p_.sim_elapsed) {  // a new run started
    ++p_.runs_done;
    events_before_ += last_events_;
  }
  last_events_ = events;
  p_.sim_elapsed = elapsed;
  p_.events = events_before_ + events;
  const absl::Time now = clock_();
  p_.wall = now - start_;
  line_.Update(now, FormatSimProgress(p_));
}

void SimProgressMeter::Finish() { line_.Finish(); }

}  // namespace sluice::sim
