// Progress of `sluice sim run` on a terminal: runs done / total, simulated time of the run in
// progress, events per wall-clock second and an ETA, as one self-rewriting stderr line
// (common::ProgressLine). Fed by SimConfig::on_sample; the wall clock is the binary's
// (SimRunOptions::wall_clock), since src/sim reads none. Thread-compatible.
#ifndef SLUICE_SIM_CLI_SIM_PROGRESS_H_
#define SLUICE_SIM_CLI_SIM_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "common/progress_line.h"

namespace sluice::sim {

struct SimProgress {
  int runs_done = 0;   // finished runs
  int runs_total = 0;  // workload variants x policies
  absl::Duration sim_elapsed;  // virtual time into the run in progress
  absl::Duration horizon;      // the experiment's horizon (each run's length)
  int64_t events = 0;          // events run so far, all runs
  absl::Duration wall;         // wall-clock time since the command started
};

// "run 2/6  sim 120/300 s  1.25M events/s  ETA 0:42". The ETA assumes the remaining simulated
// time goes at the rate so far ("ETA ?" before any progress); events/s is "-" at wall 0.
std::string FormatSimProgress(const SimProgress& p);

// Turns SimConfig::on_sample calls into progress lines. A sample whose elapsed time is below the
// previous one starts the next run.
class SimProgressMeter {
 public:
  SimProgressMeter(std::ostream& out, std::function<absl::Time()> wall_clock, int runs_total,
                   absl::Duration horizon);
  void OnSample(absl::Duration elapsed, int64_t events);
  // Ends the line (call once all runs are done).
  void Finish();

 private:
  common::ProgressLine line_;
  std::function<absl::Time()> clock_;
  absl::Time start_;
  SimProgress p_;
  int64_t events_before_ = 0;  // events of the finished runs
  int64_t last_events_ = 0;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_SIM_PROGRESS_H_
