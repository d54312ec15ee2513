// Long-tail serverless fleets: GenerateLongTailFleet draws N functions' arrival parameters
// (popularity, trigger, burstiness, diurnal swing, timer period) fitted to the published
// statistics of the Azure Functions 2019 trace (Shahrad et al., "Serverless in the Wild",
// USENIX ATC'20); MakeLongTailSource turns one function's parameters into a lazy ArrivalSource.
// Used by the experiment loader's function groups (sim/experiment/function_group.cc) and tests.
// Pure functions of their arguments; thread-safe. Sources are not thread-safe.
//
// What is matched, and how (docs/longtail.md has the derivation):
//  - Fig. 5(a), average invocations per day across functions: a piecewise log-linear inverse CDF
//    through (0, 0.1/day), (0.45, 24/day = once per hour), (0.81, 1440/day = once per minute),
//    (1, 1.2e6/day). The top knot is solved so that the most popular 18.6 % of functions carry
//    99.6 % of invocations (the paper's figure); the rates span 7 orders of magnitude.
//    Quantiles are stratified (function i of N gets one draw from each 1/N stratum, shuffled),
//    so even a 500-function fleet hits the CDF points to within 1/N.
//  - Fig. 3, functions per trigger: HTTP 55.0 %, timer 15.6 %, queue 15.2 %, orchestration
//    6.9 %, storage 2.8 %, event 2.2 %, others 2.2 %. Timers are drawn only among functions
//    invoked at most once a minute, so they carry few invocations (the paper: 2.0 %).
//  - Fig. 6, inter-arrival CV: timers are periodic (CV 0); other triggers get a log-normal CV
//    (median 1, sigma 0.8 in log space, clipped to [0.2, 8]), i.e. about 40 % of them burstier
//    than Poisson. That shape is read off the figure, not fitted to exact points.
//  - Diurnal pattern (Fig. 4's hourly swing): each non-timer function's rate is multiplied by
//    1 + a cos(2 pi (t - peak) / 24 h), a ~ U[0, max_diurnal_amplitude], the peak jittered by
//    +-3 h around `diurnal_peak`.
// Execution time and memory are not drawn from Figs. 7-8: a group's functions are GPU models,
// whose latency and footprint come from the perf model of the model each function is given.
#ifndef SLUICE_SIM_WORKLOAD_LONGTAIL_H_
#define SLUICE_SIM_WORKLOAD_LONGTAIL_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "sim/workload/arrivals.h"
#include "sim/workload/workload_spec.h"

namespace sluice::sim {

struct LongTailFleetOptions {
  double rate_scale = 1.0;             // multiplies every function's rate, > 0
  double max_diurnal_amplitude = 0.5;  // [0, 1)
  absl::Duration diurnal_peak = absl::Hours(14);  // mean time of day of the peak (source time)
};

// The Fig. 5(a) fit: average invocations per day of the function at popularity quantile q in
// [0, 1] (0 = least popular). Monotone; log-linear between the knots listed above.
double DailyInvocationsAtQuantile(double q);

// Fig. 3's share of functions per trigger, indexed by AzureTrigger; sums to 1.
const std::array<double, 7>& TriggerShares();
std::string_view TriggerName(AzureTrigger trigger);

// `count` functions' arrival parameters, deterministic in (count, seed, options). Function i's
// draws depend only on seed, i and its stratum, so fleets are repeatable. InvalidArgument for
// count < 1 or options out of range (naming the option).
absl::StatusOr<std::vector<LongTailArrivals>> GenerateLongTailFleet(
    int count, uint64_t seed, const LongTailFleetOptions& options);

// Fleet statistics the tests compare with the paper: fraction of functions with a mean rate of at
// most once per hour / once per minute, and the share of all invocations carried by the most
// popular `top_fraction` of functions (by mean rate).
struct FleetStats {
  double at_most_hourly = 0;
  double at_most_per_minute = 0;
  double top_share = 0;
};
FleetStats ComputeFleetStats(const std::vector<LongTailArrivals>& fleet, double top_fraction);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_LONGTAIL_H_
