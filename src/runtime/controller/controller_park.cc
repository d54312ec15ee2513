// Memory-only idle driven by the controller (issue 13 item 4, docs/platform.md "Cold starts"):
// at each load report a function's scaler says how many of its ready instances should hold an
// SM share (core::HorizontalScaler::ActiveWanted); the others are parked on their agents
// (PUT /agent/v1/instances/{id}/park), the longest idle first. A parked instance keeps its GPU
// memory; the token server unparks it by itself when a request reaches it.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runtime/common/log.h"
#include "runtime/controller/agent_api.h"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

void ControllerCore::DriveParking(const std::string& name, const core::HorizontalScaler& scaler,
                                  absl::Time now) {
  std::vector<ControllerInstance*> ready;
  for (auto& [id, i] : instances_) {
    if (i.function == name && i.state == "ready" && !i.removing && !i.profiling) {
      ready.push_back(&i);
    }
  }
  for (ControllerInstance* i : ready) {
    ParkBook& b = parking_[i->id];
    if (i->in_flight > 0 || b.last_busy == absl::InfinitePast()) b.last_busy = now;
  }
  const int active =
      std::clamp(scaler.ActiveWanted(now), 0, static_cast<int>(ready.size()));
  // The most recently busy keep their share; the longest idle beyond `active` are parked.
  std::sort(ready.begin(), ready.end(), [this](const ControllerInstance* a,
                                               const ControllerInstance* b) {
    const absl::Time ta = parking_[a->id].last_busy, tb = parking_[b->id].last_busy;
    return ta != tb ? ta > tb : a->id > b->id;
  });
  for (size_t k = 0; k < ready.size(); ++k) {
    const bool park = static_cast<int>(k) >= active;
    ParkBook& b = parking_[ready[k]->id];
    if (b.parked == park) continue;
    b.parked = park;
    const std::string body = nlohmann::json{{"parked", park}}.dump();
    client_.Send(agents_[ready[k]->agent].endpoint,
                 AgentRequest("PUT", absl::StrCat("/agent/v1/instances/", ready[k]->id, "/park"),
                              body),
                 absl::Seconds(2), [id = ready[k]->id](absl::StatusOr<http::Response> r) {
                   if (!r.ok() || r->status != 200) {
                     LogWarning("controller", "park of instance ", id, " failed: ",
                                r.ok() ? r->body : std::string(r.status().message()));
                   }
                 });
  }
  std::erase_if(parking_, [this](const auto& kv) { return !instances_.contains(kv.first); });
}

}  // namespace sluice::runtime
