// The agent's status views: GET /agent/v1/node (GpuStatus, AgentInstance) and /metrics, both
// read from the supervisor and the token servers' slots at request time.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/agent/agent_api.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

constexpr InstanceState kStates[] = {
    InstanceState::kStarting,   InstanceState::kReady,  InstanceState::kDraining,
    InstanceState::kRestarting, InstanceState::kStopped, InstanceState::kFailed,
    InstanceState::kCompleted};

void SetGauge(Family<Gauge>* f, const std::vector<std::string>& labels, double v) {
  if (absl::StatusOr<Gauge*> g = f->WithLabels(labels); g.ok()) (*g)->Set(v);
}

double Ratio(int64_t tokens, double per_period) {
  return per_period > 0 ? static_cast<double>(tokens) / per_period : 0.0;
}

}  // namespace

double AgentDaemon::Impl::TokensPerPeriod(const InstanceStatus& s) const {
  const int gi = GpuIndex(s.gpu_uuid);
  return gi < 0 ? 0.0 : static_cast<double>(gpus[static_cast<size_t>(gi)].tokens_per_period);
}

absl::Status AgentDaemon::Impl::CreateMetrics() {
  const std::vector<std::string> inst = {"function", "instance"};
  SLUICE_ASSIGN_OR_RETURN(gauges.sm_share,
                          metrics.AddGauge("sluice_agent_instance_sm_share",
                                           "SM-share token budget this period (before the time "
                                           "quota) / GPU tokens per period",
                                           inst));
  SLUICE_ASSIGN_OR_RETURN(gauges.time_quota,
                          metrics.AddGauge("sluice_agent_instance_time_quota",
                                           "Time quota q: share of each time window the instance "
                                           "may run kernels for", inst));
  SLUICE_ASSIGN_OR_RETURN(gauges.effective_share,
                          metrics.AddGauge("sluice_agent_instance_effective_share",
                                           "Token budget this period after the time quota / GPU "
                                           "tokens per period (s x q over a window)", inst));
  SLUICE_ASSIGN_OR_RETURN(gauges.blocks,
                          metrics.AddGauge("sluice_agent_instance_blocks_last_period",
                                           "Kernel blocks the instance ran last period", inst));
  SLUICE_ASSIGN_OR_RETURN(gauges.mem_used,
                          metrics.AddGauge("sluice_agent_instance_memory_used_bytes",
                                           "Device memory charged to the instance", inst));
  SLUICE_ASSIGN_OR_RETURN(gauges.restarts,
                          metrics.AddGauge("sluice_agent_instance_restarts",
                                           "Restarts of the instance since it was started",
                                           inst));
  SLUICE_ASSIGN_OR_RETURN(gauges.instances,
                          metrics.AddGauge("sluice_agent_instances", "Instances by state",
                                           {"state"}));
  SLUICE_ASSIGN_OR_RETURN(gauges.tokens,
                          metrics.AddGauge("sluice_agent_gpu_tokens_per_period",
                                           "Kernel blocks the GPU's token server hands out per "
                                           "period", {"gpu"}));
  return absl::OkStatus();
}

std::array<int64_t, 4> AgentDaemon::Impl::SlotTotals(const InstanceStatus& s) const {
  std::array<int64_t, 4> t = {0, 0, 0, 0};
  const int gi = GpuIndex(s.gpu_uuid);
  if (gi < 0 || s.pid == 0) return t;
  for (const SlotView& v : token_servers[static_cast<size_t>(gi)]->Slots()) {
    if (v.state != SLUICE_SLOT_ACTIVE || v.instance.value() != s.id) continue;
    t[0] += v.tokens_issued;  // the budget granted for the current period
    t[1] += v.blocks_last_period;
    t[2] += v.mem_used_bytes;
    t[3] += v.share_tokens;
  }
  return t;
}

Json AgentDaemon::Impl::InstanceJson(const InstanceStatus& s) const {
  const std::array<int64_t, 4> slots = SlotTotals(s);
  const double tokens = TokensPerPeriod(s);
  Json j = {{"id", s.id},
            {"function", s.function},
            {"gpu", s.gpu_uuid},
            {"gpus", GpusOf(s)},
            {"port", s.port},
            {"pid", s.pid},
            {"state", InstanceStateName(s.state)},
            {"restarts", s.restarts},
            {"exit_code", nullptr},
            {"request", s.quota.request},
            {"limit", s.quota.limit},
            {"time_quota", s.quota.time_quota},
            {"sm_share", Ratio(slots[3], tokens)},
            {"effective_share", Ratio(slots[0], tokens)},
            {"blocks_last_period", slots[1]},
            {"mem_used_bytes", slots[2]},
            {"in_flight", s.in_flight},
            {"started_ms", absl::ToInt64Milliseconds(s.started - absl::UnixEpoch())},
            {"ready_ms", nullptr},
            {"message", s.message}};
  if (s.exit_code) j["exit_code"] = *s.exit_code;
  if (s.ready_after) j["ready_ms"] = absl::ToInt64Milliseconds(*s.ready_after);
  return j;
}

Json AgentDaemon::Impl::GpuJson(const AgentGpu& g) const {
  return {{"uuid", g.info.uuid},
          {"name", g.info.name},
          {"index", g.info.index},
          {"sm_count", g.info.sm_count},
          {"memory_bytes", g.info.memory_bytes},
          {"tokens_per_period", g.tokens_per_period},
          {"period_us", absl::ToInt64Microseconds(options.period)}};
}

http::Response AgentDaemon::Impl::Node() {
  Json gj = Json::array(), ij = Json::array();
  for (size_t k = 0; k < gpus.size(); ++k) {
    gj.push_back(GpuJson(gpus[k]));
    // The token server's state for the controller's dashboard (NONE/EMERGENCY/...).
    if (k < token_servers.size()) gj.back()["share_state"] = token_servers[k]->share_state();
  }
  for (const InstanceStatus& s : supervisor->List()) ij.push_back(InstanceJson(s));
  Json j = {{"node", options.node_name}, {"device", device}, {"gpus", gj}, {"instances", ij}};
  return http::JsonResponse(200, j.dump());
}

http::Response AgentDaemon::Impl::Metrics() {
  std::vector<int> by_state(std::size(kStates), 0);
  for (const InstanceStatus& s : supervisor->List()) {
    ++by_state[static_cast<size_t>(s.state)];
    const std::vector<std::string> labels = {s.function, std::to_string(s.id)};
    const std::array<int64_t, 4> slots = SlotTotals(s);
    const double tokens = TokensPerPeriod(s);
    SetGauge(gauges.sm_share, labels, Ratio(slots[3], tokens));
    SetGauge(gauges.time_quota, labels, s.quota.time_quota);
    SetGauge(gauges.effective_share, labels, Ratio(slots[0], tokens));
    SetGauge(gauges.blocks, labels, static_cast<double>(slots[1]));
    SetGauge(gauges.mem_used, labels, static_cast<double>(slots[2]));
    SetGauge(gauges.restarts, labels, s.restarts);
  }
  for (InstanceState st : kStates) {
    SetGauge(gauges.instances, {InstanceStateName(st)}, by_state[static_cast<size_t>(st)]);
  }
  for (const AgentGpu& g : gpus) {
    SetGauge(gauges.tokens, {g.info.uuid}, static_cast<double>(g.tokens_per_period));
  }
  http::Response r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = metrics.Render();
  return r;
}

}  // namespace sluice::runtime
