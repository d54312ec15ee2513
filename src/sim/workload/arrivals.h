// Arrival generation for the simulator: parse a `workload:` YAML node into a WorkloadSpec and turn
// a spec into an ArrivalSource (Poisson, Gamma, RPS series, request trace, Azure Functions).
// Used by the sim engine (one source per inference function) and the experiment loader.
// Sources are not thread-safe; the free functions are stateless and thread-safe.
#ifndef SLUICE_SIM_WORKLOAD_ARRIVALS_H_
#define SLUICE_SIM_WORKLOAD_ARRIVALS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "sim/workload/workload_spec.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim {

// One request arrival. Token counts are 0 when the workload does not carry them.
struct Arrival {
  absl::Time at;
  int prompt_tokens = 0;
  int output_tokens = 0;
};

// Yields arrivals in non-decreasing time order. Deterministic given the seed. Not thread-safe.
class ArrivalSource {
 public:
  virtual ~ArrivalSource() = default;
  // The next arrival, or nullopt when exhausted (past the horizon). Stays nullopt afterwards.
  virtual std::optional<Arrival> Next() = 0;
  // Mean rate in requests/s over the source's span if known (Poisson/Gamma: rate; series and
  // traces: total arrivals in the window / window length, after `scale`), else 0.
  virtual double MeanRate() const = 0;
  // Fluid mode (the engine's approximate model of busy functions): the number of arrivals in
  // [from, to), drawn from the process's rate over the window and its count variance instead of
  // generating each arrival; nullopt when the source cannot (the engine then keeps the function
  // exact). Windows must be asked for in increasing order; a source asked for counts must not be
  // asked for Next() afterwards (their random streams are shared).
  virtual std::optional<int64_t> DrawCount(absl::Time /*from*/, absl::Time /*to*/) {
    return std::nullopt;
  }
  // Coefficient of variation of the inter-arrival times (1 for Poisson); used by fluid mode's
  // queue approximation.
  virtual double InterArrivalCv() const { return 1.0; }
};

// A well-mixed 64-bit seed for stream `stream` of run seed `seed` (SplitMix64 of both). The
// engine should give each function its own stream, e.g. DeriveSeed(seed, function_index).
uint64_t DeriveSeed(uint64_t seed, uint64_t stream);

// Parses a `workload:` YAML node (forms in src/sim/workload/README.md). `file` names the YAML
// file for errors; `base_dir` resolves a relative `path`. Errors name file, line and field
// (common::InputError): unknown keys, wrong value types, negative rate, cv <= 0, scale < 0,
// missing path, unknown kind or spread. The file behind `path` is not opened here.
absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(const YAML::Node& node, const std::string& file,
                                               const std::string& base_dir);

// Loads any file the spec needs (plain or .xz) and returns a source generating the arrivals in
// [start, start + horizon). Trace time 0 (the first trace row / series line, after
// `start_offset`) maps to `start`. Malformed or unreadable trace files -> error naming the file
// and line. kNone yields no arrivals.
absl::StatusOr<std::unique_ptr<ArrivalSource>> MakeArrivalSource(const WorkloadSpec& spec,
                                                                 uint64_t seed, absl::Time start,
                                                                 absl::Duration horizon);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_ARRIVALS_H_
