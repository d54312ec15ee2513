// Device capacity calibration with sluice-spin, shared by the node agent daemon and
// `sluice node share-test`: one unthrottled sluice-spin at fixed-time blocks measures how many
// blocks per second the whole GPU runs; a token server hands out that many per period (less a
// headroom). Also reads sluice-spin's JSON event lines. Blocking; thread-compatible.
#ifndef SLUICE_RUNTIME_AGENT_SPIN_CALIBRATION_H_
#define SLUICE_RUNTIME_AGENT_SPIN_CALIBRATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "runtime/common/subprocess.h"

namespace sluice::runtime {

// Starts sluice-spin with the given arguments (stdout captured), in whatever environment and
// device the caller chose.
using SpinSpawner =
    absl::FunctionRef<absl::StatusOr<std::unique_ptr<Subprocess>>(std::vector<std::string>)>;

// Kernels per sluice-spin batch used by calibration and the share test.
inline constexpr int kSpinBatch = 8;

// Reads sluice-spin's JSON lines until one whose "event" is `event`. An "error" event, the end
// of output or `timeout` without a line is an error.
absl::StatusOr<nlohmann::json> ReadSpinEvent(Subprocess& p, const std::string& event,
                                             absl::Duration timeout);

// Runs `sluice-spin --probe` and returns its probe event ({"name", "uuid", "sm_count", ...}).
absl::StatusOr<nlohmann::json> ProbeSpin(SpinSpawner spawn);

// Blocks per second the device runs with `grid` blocks of `block_ns` per kernel, measured over
// one second with one unthrottled process. Internal when it measured nothing.
absl::StatusOr<int64_t> CalibrateBlocksPerSecond(SpinSpawner spawn, int grid, int64_t block_ns);

// Tokens (blocks) per period: capacity x period x (1 - headroom), at least 1.
int64_t TokensPerPeriod(int64_t blocks_per_s, absl::Duration period, double headroom);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_SPIN_CALIBRATION_H_
