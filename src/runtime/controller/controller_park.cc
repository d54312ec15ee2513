// Memory-only idle driven by the controller (issue 13 item 4, docs/platform.md "Cold starts"):
// at each load report a function's scaler says how many of its instances should hold an SM
// share (core::HorizontalScaler::ActiveWanted); core::PickParking, the rule the simulator uses
// too, says which ready ones to park on their agents (PUT /agent/v1/instances/{id}/park) and
// which to unpark. A parked instance keeps its GPU memory; the token server unparks it by itself
// when a request reaches it, and the agent's next node report says so.
#include <vector>

#include "absl/strings/str_cat.h"

#include "core/longtail/pick_parking.h"
#include "nlohmann/json.hpp"
#include "runtime/common/log.h"
#include "runtime/controller/agent_api.h"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

void ControllerCore::DriveParking(const std::string& name, const core::HorizontalScaler& scaler,
                                  absl::Time now) {
  std::vector<core::ParkingCandidate> ready;
  int starting = 0;
  for (auto& [id, i] : instances_) {
    if (i.function != name || i.removing || i.profiling)
      continue;
    if (i.state != "ready") {
      starting += IsTerminalAgentState(i.state) || i.state == "draining" ? 0 : 1;
      continue;
    }
    if (i.in_flight > 0 || i.idle_since == absl::InfinitePast())
      i.idle_since = now;
    ready.push_back({id, i.parked, i.in_flight, i.idle_since});
  }
  const core::ParkingDecision d = core::PickParking(ready, scaler.ActiveWanted(now) - starting);
  for (auto [ids, park] : {std::pair{&d.park, true}, std::pair{&d.unpark, false}}) {
    for (int64_t id : *ids) {
      ControllerInstance& i = instances_.at(id);
      i.parked = park;
      const std::string body = nlohmann::json{{"parked", park}}.dump();
      client_.Send(agents_[i.agent].endpoint,
                   AgentRequest("PUT", absl::StrCat("/agent/v1/instances/", id, "/park"), body),
                   absl::Seconds(2), [id](absl::StatusOr<http::Response> r) {
                     if (!r.ok() || r->status != 200) {
                       LogWarning("controller", "park of instance ", id, " failed: ",
                                  r.ok() ? r->body : std::string(r.status().message()));
                     }
                   });
    }
  }
}

}  // namespace sluice::runtime
