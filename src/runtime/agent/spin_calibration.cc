// sluice-spin driving for calibration. The first batch of kernels is launched at t = 0, so its
// blocks are excluded from the rate (they did not take the measured span to run).
#include "runtime/agent/spin_calibration.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {

absl::StatusOr<nlohmann::json> ReadSpinEvent(Subprocess& p, const std::string& event,
                                             absl::Duration timeout) {
  while (true) {
    SLUICE_ASSIGN_OR_RETURN(std::string line, p.ReadLine(timeout));
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("event")) continue;
    if (j["event"] == event) return j;
    if (j["event"] == "error") {
      return absl::InternalError(absl::StrCat("sluice-spin failed: ", line));
    }
  }
}

absl::StatusOr<nlohmann::json> ProbeSpin(SpinSpawner spawn) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> p, spawn({"--probe"}));
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json probe, ReadSpinEvent(*p, "probe", absl::Seconds(30)));
  (void)p->Wait();
  return probe;
}

absl::StatusOr<int64_t> CalibrateBlocksPerSecond(SpinSpawner spawn, int grid, int64_t block_ns) {
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<Subprocess> p,
      spawn({"--grid", std::to_string(grid), "--block-ns", std::to_string(block_ns), "--batch",
             std::to_string(kSpinBatch), "--seconds", "1"}));
  SLUICE_ASSIGN_OR_RETURN(nlohmann::json r, ReadSpinEvent(*p, "result", absl::Seconds(60)));
  (void)p->Wait();
  const double span_s = (r.value("last_ns", 0.0) - r.value("first_ns", 0.0)) / 1e9;
  const double blocks = r.value("blocks", 0.0) - double(grid) * kSpinBatch;
  if (span_s <= 0 || blocks <= 0) return absl::InternalError("calibration measured nothing");
  return static_cast<int64_t>(blocks / span_s);
}

int64_t TokensPerPeriod(int64_t blocks_per_s, absl::Duration period, double headroom) {
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(blocks_per_s) *
                                                   absl::ToDoubleSeconds(period) *
                                                   (1 - headroom)));
}

}  // namespace sluice::runtime
