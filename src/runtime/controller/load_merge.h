// LoadMerger: one load signal from several gateway replicas (issue 12). Every gateway reports
// its own share of each function's load every second (POST /internal/v1/load with "gateway");
// the controller keeps each gateway's latest report and drives its scalers with the sum over
// the gateways heard from recently, once per round: on the report of the pacing gateway (the
// first fresh one by id), so the scalers still see one sample per second. Used by
// ControllerCore::Load; pure (time comes in). Thread safety: none; the controller's loop.
#ifndef SLUICE_RUNTIME_CONTROLLER_LOAD_MERGE_H_
#define SLUICE_RUNTIME_CONTROLLER_LOAD_MERGE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {

class LoadMerger {
 public:
  // A gateway unheard of for `stale` no longer counts (nor paces).
  explicit LoadMerger(absl::Duration stale = absl::Seconds(3)) : stale_(stale) {}

  // Records `gateway`'s entries (the report's validated "functions" array) at `now`. Returns
  // the merged entries when this report paces the round, else nullopt. Merged per function
  // name: rps, queued, in_flight, arrivals and answered summed; latency_ms weighted by answered;
  // arrival_cv the largest seen. Fields of the pacing gateway's entry are kept otherwise.
  std::optional<nlohmann::json> Add(const std::string& gateway, const nlohmann::json& functions,
                                    absl::Time now);
  // Gateways heard from within `stale` of `now`.
  int Fresh(absl::Time now) const;

 private:
  struct Report {
    nlohmann::json functions;
    absl::Time at;
  };
  const absl::Duration stale_;
  std::map<std::string, Report> reports_;  // by gateway id
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_LOAD_MERGE_H_
