// Re-adoption after an agent restart: the previous agent's instances keep running (they lead
// their own process groups), so the new agent takes them over instead of starting them again.
// Their interception libraries re-register with the restarted token servers on their own
// (docs/intercept-protocol.md, "Re-registration"), which is why the emulated GPUs keep their
// uuids and the token socket its path.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "nlohmann/json.hpp"
#include "runtime/agent/agent_api.h"
#include "runtime/agent/instance_record.h"
#include "runtime/common/log.h"

namespace sluice::runtime {

void AgentDaemon::Impl::KeepEmulatedGpus() {
  std::ifstream in(emulated_gpus_path());
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_array() && doc.size() == gpus.size()) {
    bool strings = true;
    for (const nlohmann::json& u : doc)
      strings = strings && u.is_string();
    for (size_t i = 0; strings && i < gpus.size(); ++i) {
      gpus[i].emu_uuid = doc[i].get<std::string>();
      gpus[i].info.uuid = gpus[i].emu_uuid;
    }
  }
  nlohmann::json now = nlohmann::json::array();
  for (const AgentGpu& g : gpus)
    now.push_back(g.emu_uuid);
  std::ofstream(emulated_gpus_path(), std::ios::trunc) << now.dump() << "\n";
}

void AgentDaemon::Impl::AdoptInstances(
    const absl::StatusOr<std::vector<InstanceRecord>>& records) {
  if (!records.ok()) {
    LogError("agent", "not re-adopting instances: ", records.status().message());
    return;
  }
  for (const InstanceRecord& r : *records) {
    const std::vector<std::string> uuids =
        r.launch.gpus.empty() ? std::vector<std::string>{r.launch.gpu_uuid} : r.launch.gpus;
    std::vector<int> gis;
    for (const std::string& u : uuids) {
      if (const int gi = GpuIndex(u); gi >= 0)
        gis.push_back(gi);
    }
    if (!RecordAlive(r)) {
      LogInfo("agent", "instance ", r.id, " (pid ", r.pid, ") has gone; not re-adopted");
      continue;
    }
    if (gis.size() != uuids.size()) {
      LogWarning("agent", "instance ", r.id, " (pid ", r.pid, ") runs on GPUs [",
                 absl::StrJoin(uuids, ", "), "] this node no longer has; stopping it");
      kill(-r.pid, SIGKILL);
      continue;
    }
    const QuotaUpdate& q = r.launch.quota;
    const InstanceSpec spec{{q.request, q.limit, q.time_quota}, q.slo_sensitive, r.launch.llm,
                            q.mem_limit_bytes};
    absl::Status s = SetSpecOnGpus(r.id, gis, spec);
    absl::StatusOr<InstanceStatus> adopted =
        s.ok() ? supervisor->Adopt(r) : absl::StatusOr<InstanceStatus>(s);
    if (!adopted.ok()) {
      LogWarning("agent", "instance ", r.id, " (pid ", r.pid, ") not re-adopted: ",
                 adopted.status().message());
      continue;
    }
    {
      absl::MutexLock lock(&gpus_mu);
      instance_gpus[r.id] = uuids;
    }
    LogInfo("agent", "re-adopted instance ", r.id, " of '", r.launch.function, "' (pid ", r.pid,
            ", port ", r.launch.port, ")");
  }
}

}  // namespace sluice::runtime
