// WorkloadSpec: how requests of one function arrive. Parsed from experiment YAML by
// src/sim/workload (ParseWorkloadSpec) and turned into an ArrivalSource there. Value type.
#ifndef SLUICE_SIM_WORKLOAD_WORKLOAD_SPEC_H_
#define SLUICE_SIM_WORKLOAD_WORKLOAD_SPEC_H_

#include <string>

#include "absl/time/time.h"

namespace sluice::sim {

enum class WorkloadKind {
  kNone,            // no arrivals (training functions)
  kPoisson,         // rate_rps
  kGamma,           // rate_rps, cv
  kRpsSeries,       // path: one value per line per second, times `scale` (Dilu/INFless format)
  kRequestTrace,    // path: CSV with a timestamp column, optional token columns
  kAzureFunctions,  // path: Azure Functions 2019 per-minute invocation counts
  kLongTail,        // one function of a long-tail fleet (longtail: below; sim/workload/longtail.h)
};

// The Azure Functions 2019 trigger groups (Shahrad et al., ATC'20, Fig. 3).
enum class AzureTrigger { kHttp, kTimer, kQueue, kOrchestration, kStorage, kEvent, kOthers };

// Arrivals of one long-tail function (WorkloadKind::kLongTail), usually drawn by
// GenerateLongTailFleet (sim/workload/longtail.h). A timer fires exactly every `timer_period`
// from `timer_phase` on (CV 0, no diurnal swing). Any other trigger is a renewal process whose
// inter-arrival times have coefficient of variation `cv` (Gamma; 1 = Poisson) in operational
// time, stretched by a diurnal rate rate_rps x (1 + diurnal_amplitude x cos(2 pi (t - peak) /
// 24 h)), t in source seconds.
struct LongTailArrivals {
  AzureTrigger trigger = AzureTrigger::kHttp;
  double rate_rps = 0;   // long-run mean rate, >= 0
  double cv = 1.0;       // > 0; ignored for timers
  absl::Duration timer_period = absl::ZeroDuration();  // > 0 for timers
  absl::Duration timer_phase = absl::ZeroDuration();   // first firing, in [0, timer_period)
  double diurnal_amplitude = 0;                        // [0, 1)
  absl::Duration diurnal_peak = absl::Hours(14);       // time of day of the peak rate
};

// How the requests counted in one series bucket (a second of an RPS series, a minute of an Azure
// Functions row) are placed inside that bucket.
enum class ArrivalSpread {
  kEven,     // evenly spaced: the i-th of n at bucket_start + (i + 0.5) * width / n
  kPoisson,  // a Poisson process at value * scale / width inside the bucket
  kUniform,  // n = round(value * scale) arrivals, each uniform in the bucket, sorted
};

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kNone;
  double rate_rps = 0;
  double cv = 1.0;
  std::string path;    // resolved relative to the experiment file's directory
  double scale = 1.0;  // multiplies series values and Azure counts; divides request-trace time
  // Skip this much of the source's own stream (replayed seconds; for request_trace after `scale`).
  absl::Duration start_offset = absl::ZeroDuration();
  std::string timestamp_column = "TIMESTAMP";
  std::string prompt_tokens_column;  // optional
  std::string output_tokens_column;  // optional
  std::string function_id;           // Azure Functions: which row (HashFunction); empty = first row
  ArrivalSpread spread = ArrivalSpread::kEven;  // series and Azure Functions buckets
  LongTailArrivals longtail;                    // kLongTail only
  std::string source_file;                      // where this spec was written (for errors)
  int source_line = 0;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_WORKLOAD_SPEC_H_
