// ControllerCore: registry, admin answers and status JSON. Placement and scaling live in
// controller_instances.cc, profiling in controller_profiling.cc, HTTP parsing in
// controller_http.cc.
#include "runtime/controller/controller_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/common/log.h"
#include "runtime/controller/profiled_latency.h"
#include "runtime/controller/scale_plan.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {

using nlohmann::json;

ControllerCore::ControllerCore(const ControllerOptions& options, http::EventLoop& loop,
                               Store& store)
    : options_(options), loop_(loop), store_(store), client_(loop) {
  // Names are constants of ours, so these cannot fail.
  cold_starts_metric_ = *metrics_.AddCounter("sluice_controller_cold_starts_total",
                                             "Instances started from zero", {"function"});
  trials_metric_ = *metrics_.AddCounter("sluice_controller_profiling_trials_total",
                                        "Profiling trials run", {"function"});
  instances_metric_ = *metrics_.AddGauge("sluice_controller_instances",
                                         "Instances by function and state", {"function", "state"});
  functions_metric_ =
      *metrics_.AddGauge("sluice_controller_functions", "Functions by state", {"state"});
  version_metric_ = *metrics_.AddGauge("sluice_controller_routes_version", "Routes version", {});
  active_gpus_metric_ = *metrics_.AddGauge(
      "sluice_controller_active_gpus", "GPUs holding at least one instance (Dilu's active GPUs)",
      {});
  replaced_metric_ = *metrics_.AddCounter("sluice_controller_instances_replaced_total",
                                          "Instances lost with their node", {"function"});
  replacement_seconds_metric_ =
      *metrics_.AddGauge("sluice_controller_replacement_seconds",
                         "Node lost -> replacement ready, latest", {"function"});
}

ControllerCore::~ControllerCore() {
  StopWorkers();
}

absl::Status ControllerCore::Init() {
  SLUICE_ASSIGN_OR_RETURN(std::vector<NodeReport> nodes, FetchAgentsBlocking());
  SLUICE_RETURN_IF_ERROR(LoadRegistry());
  AdoptInstances(nodes);
  return absl::OkStatus();
}

absl::Status ControllerCore::Persist(ControllerFunction& f) {
  absl::StatusOr<int64_t> v =
      store_.PutIf(FunctionKey(f.record.spec.name), f.store_version, RecordToJson(f.record));
  if (!v.ok())
    return v.status();
  f.store_version = *v;
  return absl::OkStatus();
}

namespace {

// The spec's params; for `sluice`, whose busy functions scale with Dilu's lazy scaler, the
// controller's lazy options (--lazy-window-s, --phi-out, --phi-in) are the defaults of Dilu's
// window_s / phi_out / phi_in, as they are for plain `dilu`.
std::vector<core::PolicyParam> PolicyParamsWithLazy(const FunctionSpec& spec,
                                                    const core::LazyScalerConfig& lazy) {
  std::vector<core::PolicyParam> params = CorePolicyParams(spec);
  if (spec.policy != "sluice")
    return params;
  const std::pair<const char*, std::string> defaults[] = {
      {"window_s", absl::StrCat(absl::ToDoubleSeconds(lazy.window))},
      {"phi_out", absl::StrCat(lazy.phi_out)},
      {"phi_in", absl::StrCat(lazy.phi_in)}};
  for (const auto& [key, value] : defaults) {
    if (std::none_of(params.begin(), params.end(),
                     [key](const core::PolicyParam& p) { return p.key == key; })) {
      params.push_back({key, value, 0});
    }
  }
  return params;
}

}  // namespace

absl::Status ControllerCore::MakePolicy(ControllerFunction& f) {
  f.policy.reset();
  const FunctionSpec& spec = f.record.spec;
  if (spec.policy == kDefaultPolicy && spec.policy_params.empty())
    return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(
      f.policy, core::MakePolicySet(spec.policy, PolicyParamsWithLazy(spec, options_.lazy),
                                    FunctionKey(spec.name)));
  // The set is new to a cluster that may already hold allocations: replay them into its indices.
  for (const core::GpuState& g : cluster_->gpus()) {
    for (const core::Allocation& a : g.allocations)
      f.policy->placement().OnAdded(a, *cluster_);
  }
  return absl::OkStatus();
}

core::FunctionTraits ControllerCore::Traits(const ControllerFunction& f) const {
  const FunctionSpec& spec = f.record.spec;
  const ProfileInfo& p = *f.record.profile;
  core::FunctionTraits t;
  t.id = f.id;
  t.kind = spec.kind == FunctionKind::kTraining ? core::FunctionKind::kTraining
           : spec.kind == FunctionKind::kLlm    ? core::FunctionKind::kLlmInference
                                                : core::FunctionKind::kInference;
  t.profiled = {p.request, p.limit, p.time_quota};
  t.min_instances = f.record.min();
  t.max_instances = f.record.max();
  t.capacity_rps = p.capacity_rps;
  t.slo_sensitive = IsSloSensitive(spec.kind);
  t.latency = f.latency.get();
  t.max_batch = spec.batching.max_batch;
  if (spec.slo_ms)
    t.slo = absl::Microseconds(*spec.slo_ms * 1000.0);
  t.memory = common::Bytes(MemoryLimitBytes(spec));
  return t;
}

void ControllerCore::MakeScaler(ControllerFunction& f) {
  f.scaler.reset();
  f.hybrid.reset();
  if (f.record.spec.kind == FunctionKind::kTraining || !f.record.profile)
    return;
  if (!f.latency) {
    absl::StatusOr<std::unique_ptr<ProfiledLatencyModel>> m =
        ProfiledLatencyModel::Create(*f.record.profile);
    if (m.ok())
      f.latency = *std::move(m);  // null without trial points: policies see no latency model
  }
  if (IsDisaggregated(f.record.spec)) {  // P/D pools: controller_llm.cc
    MakeLlmPools(f);
    return;
  }
  if (f.policy) {
    const core::FunctionTraits traits = Traits(f);
    if (f.record.spec.gpus == 1)  // a hybrid scaler's kAdd names one GPU
      f.hybrid = f.policy->MakeHybridScaler(traits);
    if (!f.hybrid)
      f.scaler = f.policy->MakeScaler(traits);
  } else {
    absl::StatusOr<std::unique_ptr<core::LazyScaler>> s = core::LazyScaler::Create(ScalerConfigFor(
        options_.lazy, f.record.min(), f.record.max(), f.record.profile->capacity_rps));
    if (!s.ok()) {
      f.record.message = std::string(s.status().message());
      return;
    }
    f.scaler = *std::move(s);
  }
  f.desired = std::clamp(f.desired, f.record.min(), f.record.max());
}

void ControllerCore::SetReady(ControllerFunction& f, const ProfileInfo& profile) {
  f.record.state = FunctionState::kReady;
  f.record.profile = profile;
  LogInfo("controller", "function '", f.record.spec.name, "' ready: <", profile.request, ", ",
          profile.limit, "> batch ", profile.batch, ", ", profile.capacity_rps, " req/s (",
          profile.source, ", ", profile.trials, " trials)");
  f.record.message.clear();
  f.record.profiling_instance = 0;
  (void)Persist(f);  // the in-memory record stays authoritative for this process
  MakeScaler(f);
  if (f.record.spec.kind == FunctionKind::kTraining) {
    f.desired = f.record.spec.training->workers;
    if (!f.record.training_launched) {
      for (int w = 0; w < f.desired; ++w) {
        if (!StartServing(f, /*restart=*/false))
          break;
      }
      f.record.training_launched = true;
      (void)Persist(f);
    }
  } else {
    f.desired = f.record.min();
    Reconcile(f, /*cold_start=*/false);
  }
  Touch();
}

void ControllerCore::SetFailed(ControllerFunction& f, const std::string& message) {
  f.record.state = FunctionState::kFailed;
  f.record.message = message;
  LogError("controller", "function '", f.record.spec.name, "' failed: ", message);
  f.record.profiling_instance = 0;
  (void)Persist(f);
  Touch();
}

absl::Status ControllerCore::LoadRegistry() {
  SLUICE_ASSIGN_OR_RETURN(auto rows, store_.List(kFunctionKeyPrefix));
  for (const auto& [key, value] : rows) {
    SLUICE_ASSIGN_OR_RETURN(FunctionRecord record, RecordFromJson(key, value));
    SLUICE_ASSIGN_OR_RETURN(std::optional<VersionedValue> v, store_.GetVersioned(key));
    ControllerFunction f;
    f.record = std::move(record);
    f.store_version = v ? v->version : 0;
    f.id = common::FunctionId(next_function_id_++);
    if (absl::Status s = MakePolicy(f); !s.ok()) {
      f.record.state = FunctionState::kFailed;  // e.g. a policy no longer registered
      f.record.message = absl::StrCat("policy: ", s.message());
    }
    functions_.emplace(f.record.spec.name, std::move(f));
  }
  SLUICE_ASSIGN_OR_RETURN(std::optional<std::string> next, store_.Get("meta/next_instance_id"));
  int64_t stored = 0;
  if (next && absl::SimpleAtoi(*next, &stored)) {
    next_instance_id_ = std::max(next_instance_id_, stored);
  }
  return absl::OkStatus();
}

json ControllerCore::InstanceJson(const ControllerInstance& i) const {
  return json{{"id", i.id},
              {"node", agents_[i.agent].node},
              {"gpu", i.gpu_uuid},
              {"url", i.url},
              {"state", i.removing && !IsTerminalAgentState(i.state) ? "draining" : i.state},
              {"restarts", i.restarts},
              {"request", i.request},
              {"limit", i.limit},
              {"time_quota", i.time_quota},
              {"batch", i.batch},
              {"sm_share", i.sm_share},
              {"mem_used_bytes", i.mem_used_bytes},
              {"in_flight", i.in_flight},
              {"parked", i.parked},
              {"role", i.mutate_to.empty() ? i.role : i.mutate_to}};
}

json ControllerCore::StatusJson(const ControllerFunction& f) const {
  json instances = json::array();
  for (const auto& [id, i] : instances_) {
    if (i.function == f.record.spec.name && !i.profiling)
      instances.push_back(InstanceJson(i));
  }
  json params = json::object();
  for (const PolicyParamSpec& p : f.record.spec.policy_params)
    params[p.key] = p.value;
  json llm = f.llm ? LlmStatusJson(f) : json(nullptr);
  return json{{"name", f.record.spec.name},
              {"kind", FunctionKindName(f.record.spec.kind)},
              {"policy", f.record.spec.policy},
              {"policy_params", std::move(params)},
              {"scaler", f.hybrid   ? std::string(f.hybrid->name())
                         : f.scaler ? std::string(f.scaler->name())
                                    : std::string()},
              {"state", FunctionStateName(f.record.state)},
              {"message", f.record.message},
              {"profile", f.record.profile ? ProfileToJson(*f.record.profile) : json(nullptr)},
              {"min", f.record.min()},
              {"max", f.record.max()},
              {"desired", f.desired},
              {"instances", std::move(instances)},
              {"cold_starts", f.record.cold_starts},
              {"llm", std::move(llm)}};
}

http::Response ControllerCore::Deploy(const std::string& yaml) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(yaml, "request", options_.default_policy);
  if (!spec.ok())
    return http::ErrorResponse(400, std::string(spec.status().message()));
  if (std::optional<http::Response> r = DeployPipeline(*spec))
    return *std::move(r);  // a pipeline's stages (controller_pipeline.cc)
  auto it = functions_.find(spec->name);
  if (it != functions_.end()) {
    if (it->second.record.spec == *spec && it->second.record.state != FunctionState::kDeleting) {
      return http::JsonResponse(200, StatusJson(it->second).dump());
    }
    return http::ErrorResponse(
        409,
        absl::StrCat("function '", spec->name, "' exists with a different spec",
                     it->second.record.state == FunctionState::kDeleting ? " (deleting)" : ""));
  }
  ControllerFunction f;
  f.record.spec = *std::move(spec);
  if (absl::Status p = MakePolicy(f); !p.ok())
    return http::ErrorResponse(400, std::string(p.message()));
  f.id = common::FunctionId(next_function_id_++);
  absl::Status s = Persist(f);
  if (!s.ok())
    return http::ErrorResponse(500, absl::StrCat("registry: ", s.message()));
  const std::string name = f.record.spec.name;
  ControllerFunction& entry = functions_.emplace(name, std::move(f)).first->second;
  StartProfiling(entry);
  Touch();
  return http::JsonResponse(201, StatusJson(entry).dump());
}

http::Response ControllerCore::List() const {
  json all = json::array();
  for (const auto& [name, f] : functions_)
    all.push_back(StatusJson(f));
  return http::JsonResponse(200, json{{"functions", std::move(all)}}.dump());
}

http::Response ControllerCore::Describe(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    if (std::optional<http::Response> r = DescribePipeline(name))
      return *std::move(r);
    return http::ErrorResponse(404, absl::StrCat("no function '", name, "'"));
  }
  json j = StatusJson(it->second);
  j["spec_yaml"] = FunctionSpecToYaml(it->second.record.spec);
  return http::JsonResponse(200, j.dump());
}

void ControllerCore::Delete(const std::string& name, http::Responder respond) {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    if (DeletePipeline(name, respond))
      return;
    respond(http::ErrorResponse(404, absl::StrCat("no function '", name, "'")));
    return;
  }
  ControllerFunction& f = it->second;
  if (f.record.state != FunctionState::kDeleting) {
    f.record.state = FunctionState::kDeleting;
    (void)Persist(f);
    f.scaler.reset();
    f.hybrid.reset();
    f.desired = 0;
    for (const ControllerInstance* i : Active(name))
      ScaleIn(i->id);
    Touch();
  }
  // Answer once the drains have been handed to the agents (ScaleIn's timers run first).
  loop_.RunAfter(options_.drain_grace, [this, name, respond = std::move(respond)]() mutable {
    auto found = functions_.find(name);
    if (found != functions_.end() && found->second.record.state == FunctionState::kDeleting) {
      absl::Status s = store_.Delete(FunctionKey(name));
      if (!s.ok()) {
        respond(http::ErrorResponse(500, absl::StrCat("registry: ", s.message())));
        return;
      }
      functions_.erase(found);
      Touch();
    }
    respond(http::JsonResponse(200, json{{"deleted", name}}.dump()));
  });
}

http::Response ControllerCore::Cluster() const {
  json nodes = json::array();
  for (const ControllerAgent& a : agents_) {
    json gpus = json::array();
    for (const ReportedGpu& g : a.gpus)
      gpus.push_back(g.raw);
    nodes.push_back(json{{"agent", a.endpoint.ToString()}, {"node", a.node}, {"gpus", gpus}});
  }
  return http::JsonResponse(200, json{{"nodes", std::move(nodes)}}.dump());
}

}  // namespace sluice::runtime
