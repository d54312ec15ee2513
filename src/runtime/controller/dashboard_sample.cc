// ControllerCore: the dashboard's sample of the controller's state (nodes and GPUs with their
// token server's state, instances with their SM share, functions with their scaling state),
// taken once a second from the node poll timer (StartPolling) and handed to Dashboard, which
// adds the gateway's load figures and derives the event log.
#include <utility>

#include "absl/time/clock.h"

#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

DashSample ControllerCore::DashboardSample(absl::Time now) const {
  DashSample s;
  s.at = now;
  for (const ControllerAgent& a : agents_) {
    for (const ReportedGpu& g : a.gpus) {
      DashGpu d{a.node, g.uuid, g.index, g.name, "NONE"};
      auto st = g.raw.find("share_state");
      if (st != g.raw.end() && st->is_string())
        d.share_state = st->get<std::string>();
      s.gpus.push_back(std::move(d));
    }
  }
  for (const auto& [id, i] : instances_) {
    if (i.profiling || i.function.empty())
      continue;
    DashInstance d;
    d.id = id;
    d.function = i.function;
    d.node = i.agent >= 0 && i.agent < static_cast<int>(agents_.size()) ? agents_[i.agent].node
                                                                       : "";
    d.gpu = i.gpu_uuid;
    d.state = i.removing ? "draining" : i.state;
    d.sm_share = i.sm_share;
    d.request = i.request;
    d.limit = i.limit;
    d.time_quota = i.time_quota;
    d.restarts = i.restarts;
    d.in_flight = i.in_flight;
    s.instances.push_back(std::move(d));
  }
  for (const auto& [name, f] : functions_) {
    DashFunction d;
    d.name = name;
    d.kind = FunctionKindName(f.record.spec.kind);
    d.policy = f.record.spec.policy;
    d.slo_ms = f.record.spec.slo_ms.value_or(0);
    d.desired = f.desired;
    d.no_room = f.unschedulable;
    d.cold_starts = f.record.cold_starts;
    for (const ControllerInstance* i : Active(name))
      ++(i->state == "ready" ? d.ready : d.starting);
    d.state = FunctionStateName(f.record.state);
    if (f.record.state == FunctionState::kReady && d.ready + d.starting == 0 &&
        (f.unschedulable || f.record.max() == 0)) {
      d.state = "unschedulable";
    }
    s.functions.push_back(std::move(d));
  }
  return s;
}

void ControllerCore::SampleDashboard() {
  // Wall-clock time, unlike the loop's monotonic clock: the dashboard labels samples and events
  // with the time of day people ask about ("what happened at 14:02"), as log lines do.
  const absl::Time now = absl::Now();
  if (dashboard_->Due(now))
    dashboard_->Add(DashboardSample(now));
}

}  // namespace sluice::runtime
