// The agent's fast cold-start path (docs/platform.md "Cold starts"): the pre-started process
// pool (claim on start, keep each runtime warm on every GPU, park idle pool processes on the
// token server), host-cache parameters from the node's store, and memory-only idle
// (PUT /agent/v1/instances/{id}/park). Runs on the daemon's EventLoop like the other handlers.
#include <sys/stat.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "runtime/agent/agent_api.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

// The variables that name an instance: the pool sets its own until the claim sets the real ones.
bool PerInstanceVar(const std::string& name) {
  return name == "PORT" || name == "SLUICE_FUNCTION" || name == "SLUICE_INSTANCE_ID" ||
         name == "SLUICE_MAX_BATCH" || name == "SLUICE_MODEL_PATH";
}

}  // namespace

void AgentDaemon::Impl::StartPool() {
  if (options.pool_per_gpu <= 0)
    return;
  ProcessPoolOptions po;
  po.dir = options.run_dir + "/pool";
  po.per_gpu = options.pool_per_gpu;
  // An idle runtime holds no share: its pool id is parked until a claim binds it to an instance.
  po.on_spawn = [this](const PooledProcess& p) {
    if (const int gi = GpuIndex(p.gpu_uuid); gi >= 0) {
      token_servers[static_cast<size_t>(gi)]->SetParked(common::InstanceId(p.pool_id), true);
    }
  };
  pool = std::make_unique<ProcessPool>(*loop, std::move(po));
}

void AgentDaemon::Impl::HostCacheParams(const StartInstance& s, EnvList& env, StartInfo& info) {
  if (params == nullptr || !options.host_cache_models)
    return;
  const std::string model = AgentParams::FileModelName(s.model_path);
  if (model.empty())
    return;
  info.params_model = model;
  if (params->store().Has(model)) {
    info.params = "host-cache";
    env.emplace_back("SLUICE_PARAMS_SOCKET", options.run_dir + "/params.sock");
    env.emplace_back("SLUICE_PARAMS_MODEL", model);
    return;
  }
  info.params = "disk";  // this start reads the file; the next finds it in host memory
  params->CacheInBackground(model, s.model_path);
}

void AgentDaemon::Impl::StartFromPool(int64_t id, const StartInstance& s,
                                      const std::vector<int>& gis, InstanceLaunch& launch,
                                      StartInfo& info) {
  if (pool == nullptr || gis.size() != 1 || s.kind != "inference")
    return;
  for (const std::string& arg : s.command) {  // one runtime per instance would never be reused
    if (arg.find("${PORT}") != std::string::npos || arg.find("${INSTANCE}") != std::string::npos) {
      return;
    }
  }
  const size_t gi = static_cast<size_t>(gis[0]);
  // The function's own environment is part of its runtime: pool processes start with it (a
  // program may read its configuration before the hand-off, e.g. examples/pipeline's stage).
  std::string flavor;
  for (const auto& [k, v] : s.env)
    absl::StrAppend(&flavor, k, "=", v, "\n");
  const absl::Time t = absl::Now();
  absl::StatusOr<PooledProcess> p =
      pool->Claim(gpus[gi].info.uuid, launch.process.argv, launch.process.env, flavor);
  const double claim_ms = absl::ToDoubleMilliseconds(absl::Now() - t);
  // Keep this runtime warm on every GPU from now on (a later wake may land on another).
  for (size_t g = 0; g < gpus.size(); ++g) {
    InstanceContext ctx{0,
                        gpus[g].info.uuid,
                        gpus[g].info.index,
                        gpus[g].info.emulated,
                        socket_path(),
                        intercept_lib,
                        emulated_dir,
                        gpus[g].emu_uuid,
                        bin_dir,
                        {gpus[g].info.uuid},
                        {gpus[g].info.index}};
    StartInstance base = s;  // keeps the function's own env (the flavor)
    base.params.clear();
    absl::StatusOr<EnvList> env = BuildInstanceEnv(base, ctx);
    if (!env.ok())
      continue;
    ProcessSpec spec = launch.process;
    spec.env.clear();
    for (auto& kv : *env) {
      if (!PerInstanceVar(kv.first))
        spec.env.push_back(std::move(kv));
    }
    pool->Want(gpus[g].info.uuid, spec, flavor);
  }
  if (!p.ok())
    return;
  launch.adopt_pid = p->pid;
  token_servers[gi]->BindPid(p->pid, common::InstanceId(id));
  token_servers[gi]->SetParked(common::InstanceId(p->pool_id), false);
  struct stat st {};
  if (stat(launch.process.log_path.c_str(), &st) != 0) {  // keep an older log of this id
    std::rename(p->log_path.c_str(), launch.process.log_path.c_str());
  }
  info.path = "pool";
  info.handoff_ms = claim_ms;
}

AgentDaemon::Impl::StartInfo AgentDaemon::Impl::StartInfoOf(int64_t id) const {
  absl::MutexLock lock(&gpus_mu);
  auto it = starts.find(id);
  return it == starts.end() ? StartInfo{} : it->second;
}

http::Response AgentDaemon::Impl::Park(const http::Request& req) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(req.param("id"), &id) || id < 0) {
    return http::ErrorResponse(
        400, absl::StrCat("instance id '", req.param("id"), "' is not a non-negative integer"));
  }
  const Json j = Json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return http::ErrorResponse(400, "body: not JSON");
  for (const auto& [k, v] : j.items()) {
    if (k != "parked")
      return http::ErrorResponse(400, "field '" + k + "': unknown");
  }
  if (!j.contains("parked") || !j["parked"].is_boolean()) {
    return http::ErrorResponse(400, "field 'parked': required, a boolean");
  }
  std::optional<InstanceStatus> cur = supervisor->Get(id);
  if (!cur || IsTerminal(cur->state)) {
    return http::ErrorResponse(404, absl::StrCat("no live instance ", id));
  }
  for (const std::string& uuid : GpusOf(*cur)) {
    if (const int gi = GpuIndex(uuid); gi >= 0) {
      token_servers[static_cast<size_t>(gi)]->SetParked(common::InstanceId(id),
                                                        j["parked"].get<bool>());
    }
  }
  return http::JsonResponse(200, InstanceJson(*cur).dump());
}

}  // namespace sluice::runtime
