// The agent API's handlers (docs/platform.md "Agent API") and the /metrics rendering. Handlers
// run on the daemon's EventLoop and answer at once; spawning is a posix_spawn (no waiting).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/agent/agent_api.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

http::Response StatusResponse(const absl::Status& s) {
  int code = 500;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument: code = 400; break;
    case absl::StatusCode::kNotFound: code = 404; break;
    case absl::StatusCode::kAlreadyExists: code = 409; break;
    case absl::StatusCode::kResourceExhausted: code = 507; break;
    default: break;
  }
  return http::ErrorResponse(code, std::string(s.message()));
}

// Whether `port` can be bound on the loopback address (instances listen there).
bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

absl::StatusOr<int64_t> IdParam(const http::Request& req) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(req.param("id"), &id) || id < 0) {
    return absl::InvalidArgumentError(absl::StrCat("instance id '", req.param("id"),
                                                   "' is not a non-negative integer"));
  }
  return id;
}


}  // namespace

http::Router AgentDaemon::Impl::MakeRouter() {
  http::Router r;
  r.Handle("GET", "/healthz",
           [](http::Request&, http::Responder respond) {
             respond(http::JsonResponse(200, R"({"ok": true})"));
           });
  r.Handle("GET", "/agent/v1/node",
           [this](http::Request&, http::Responder respond) { respond(Node()); });
  r.Handle("POST", "/agent/v1/instances", [this](http::Request& req, http::Responder respond) {
    respond(StartInstanceHandler(req));
  });
  r.Handle("PUT", "/agent/v1/instances/{id}/quota",
           [this](http::Request& req, http::Responder respond) { respond(Quota(req)); });
  r.Handle("PUT", "/agent/v1/instances/{id}/park",
           [this](http::Request& req, http::Responder respond) { respond(Park(req)); });
  r.Handle("DELETE", "/agent/v1/instances/{id}",
           [this](http::Request& req, http::Responder respond) { respond(Delete(req)); });
  r.Handle("GET", "/metrics",
           [this](http::Request&, http::Responder respond) { respond(Metrics()); });
  if (params) params->AddRoutes(r);
  return r;
}

int AgentDaemon::Impl::GpuIndex(const std::string& uuid) const {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].info.uuid == uuid) return static_cast<int>(i);
  }
  return -1;
}

int AgentDaemon::Impl::LeastLoadedGpu() const {
  std::vector<int> load(gpus.size(), 0);
  for (const InstanceStatus& s : supervisor->List()) {
    const int i = GpuIndex(s.gpu_uuid);
    if (i >= 0 && !IsTerminal(s.state)) ++load[static_cast<size_t>(i)];
  }
  return static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
}

absl::StatusOr<int> AgentDaemon::Impl::AllocatePort() {
  const std::vector<int> used = supervisor->PortsInUse();
  absl::MutexLock lock(&mu);
  const auto [lo, hi] = options.instance_ports;
  for (int n = 0; n <= hi - lo; ++n) {
    const int port = next_port;
    next_port = next_port >= hi ? lo : next_port + 1;  // round robin: a freed port rests
    if (std::find(used.begin(), used.end(), port) == used.end() && PortFree(port)) {
      return port;
    }
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("no free instance port in ", lo, "-", hi));
}

absl::StatusOr<std::vector<int>> AgentDaemon::Impl::ResolveGpus(const StartInstance& s) const {
  if (s.gpus.empty()) {
    const int gi = s.gpu.empty() ? LeastLoadedGpu() : GpuIndex(s.gpu);
    if (gi < 0) {
      return absl::InvalidArgumentError("field 'gpu': no GPU '" + s.gpu + "' on this node");
    }
    return std::vector<int>{gi};
  }
  std::vector<int> gis;
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const int gi = GpuIndex(s.gpus[i]);
    if (gi < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("field 'gpus[", i, "]': no GPU '", s.gpus[i], "' on this node"));
    }
    gis.push_back(gi);
  }
  return gis;
}

absl::Status AgentDaemon::Impl::SetSpecOnGpus(int64_t id, const std::vector<int>& gis,
                                              const InstanceSpec& spec) {
  for (int gi : gis) {
    SLUICE_RETURN_IF_ERROR(
        token_servers[static_cast<size_t>(gi)]->SetInstanceSpec(common::InstanceId(id), spec));
  }
  return absl::OkStatus();
}

std::vector<std::string> AgentDaemon::Impl::GpusOf(const InstanceStatus& s) const {
  absl::MutexLock lock(&gpus_mu);
  auto it = instance_gpus.find(s.id);
  if (it == instance_gpus.end() || it->second.empty() || it->second[0] != s.gpu_uuid) {
    return {s.gpu_uuid};
  }
  return it->second;
}

http::Response AgentDaemon::Impl::StartInstanceHandler(const http::Request& req) {
  absl::StatusOr<StartInstance> parsed = ParseStartInstance(req.body);
  if (!parsed.ok()) return StatusResponse(parsed.status());
  const StartInstance& s = *parsed;
  if (std::optional<InstanceStatus> old = supervisor->Get(s.id); old && !IsTerminal(old->state)) {
    return http::ErrorResponse(409, absl::StrCat("instance ", s.id, " already exists"));
  }
  absl::StatusOr<std::vector<int>> gis = ResolveGpus(s);
  if (!gis.ok()) return StatusResponse(gis.status());
  const AgentGpu& gpu = gpus[static_cast<size_t>((*gis)[0])];
  absl::StatusOr<int> port = AllocatePort();
  if (!port.ok()) return StatusResponse(port.status());
  InstanceContext ctx{*port,        gpu.info.uuid, gpu.info.index, gpu.info.emulated,
                      socket_path(), intercept_lib, emulated_dir,  gpu.emu_uuid,
                      bin_dir,       {},            {}};
  for (int gi : *gis) {
    ctx.gpu_uuids.push_back(gpus[static_cast<size_t>(gi)].info.uuid);
    ctx.gpu_indices.push_back(gpus[static_cast<size_t>(gi)].info.index);
  }
  absl::StatusOr<EnvList> env = BuildInstanceEnv(s, ctx);
  if (!env.ok()) return StatusResponse(env.status());
  if (!s.params.empty()) {
    absl::StatusOr<EnvList> penv = AgentParams::InstanceEnv(params.get(), s.params);
    if (!penv.ok()) return StatusResponse(penv.status());
    env->insert(env->end(), penv->begin(), penv->end());
  }
  StartInfo info;
  if (s.params.empty()) HostCacheParams(s, *env, info);
  absl::StatusOr<std::vector<std::string>> argv = ExpandCommand(s, PlaceholdersFor(s, ctx));
  if (!argv.ok()) return StatusResponse(argv.status());
  InstanceSpec spec{{s.request, s.limit, s.time_quota}, s.slo_sensitive, s.kind == "llm",
                    s.mem_limit_bytes};
  if (absl::Status st = SetSpecOnGpus(s.id, *gis, spec); !st.ok()) return StatusResponse(st);
  InstanceLaunch launch;
  launch.function = s.function;
  launch.gpu_uuid = gpu.info.uuid;
  launch.port = *port;
  launch.restart_on_failure = s.restart == "on-failure";
  launch.process = {*argv, *env, InstanceUnsetEnv(),
                    absl::StrCat(options.run_dir, "/logs/", s.function, "-", s.id, ".log")};
  launch.quota = {s.request, s.limit, s.slo_sensitive, s.mem_limit_bytes, s.time_quota};
  StartFromPool(s.id, s, *gis, launch, info);
  absl::StatusOr<InstanceStatus> added = supervisor->Add(s.id, std::move(launch));
  if (!added.ok()) return StatusResponse(added.status());
  {
    absl::MutexLock lock(&gpus_mu);
    instance_gpus[s.id] = ctx.gpu_uuids;
    starts[s.id] = info;
  }
  return http::JsonResponse(201, InstanceJson(*added).dump());
}

http::Response AgentDaemon::Impl::Quota(const http::Request& req) {
  absl::StatusOr<int64_t> id = IdParam(req);
  if (!id.ok()) return StatusResponse(id.status());
  std::optional<InstanceStatus> cur = supervisor->Get(*id);
  if (!cur) return http::ErrorResponse(404, absl::StrCat("no instance ", *id));
  absl::StatusOr<QuotaUpdate> q = ParseQuotaUpdate(req.body, cur->quota);
  if (!q.ok()) return StatusResponse(q.status());
  std::vector<int> gis;
  for (const std::string& uuid : GpusOf(*cur)) {
    if (const int gi = GpuIndex(uuid); gi >= 0) gis.push_back(gi);
  }
  InstanceSpec spec;
  if (!gis.empty()) {  // keep what a quota update does not carry (the llm flag)
    const std::optional<InstanceSpec> current =
        token_servers[static_cast<size_t>(gis[0])]->InstanceSpecOf(common::InstanceId(*id));
    if (current) spec.llm = current->llm;
  }
  spec.quota = {q->request, q->limit, q->time_quota};
  spec.slo_sensitive = q->slo_sensitive;
  spec.mem_limit_bytes = q->mem_limit_bytes;
  if (absl::Status st = SetSpecOnGpus(*id, gis, spec); !st.ok()) return StatusResponse(st);
  if (absl::Status st = supervisor->SetQuota(*id, *q); !st.ok()) return StatusResponse(st);
  return http::JsonResponse(200, InstanceJson(*supervisor->Get(*id)).dump());
}

http::Response AgentDaemon::Impl::Delete(const http::Request& req) {
  absl::StatusOr<int64_t> id = IdParam(req);
  if (!id.ok()) return StatusResponse(id.status());
  int64_t drain_ms = 10000;
  if (const std::string d = req.query_param("drain_ms"); !d.empty()) {
    if (!absl::SimpleAtoi(d, &drain_ms) || drain_ms < 0) {
      return http::ErrorResponse(400, "query 'drain_ms' must be a non-negative integer");
    }
  }
  if (absl::Status st = supervisor->Drain(*id, absl::Milliseconds(drain_ms)); !st.ok()) {
    return StatusResponse(st);
  }
  std::optional<InstanceStatus> s = supervisor->Get(*id);
  if (!s) {  // forgotten
    absl::MutexLock lock(&gpus_mu);
    instance_gpus.erase(*id);
    starts.erase(*id);
  }
  return http::JsonResponse(202, s ? InstanceJson(*s).dump() : Json{{"id", *id}}.dump());
}

}  // namespace sluice::runtime
