// Pipelines on the controller (issue 11): a spec with `pipeline` is deployed as its stage
// functions (runtime/spec ExpandPipeline: "<name>-<stage>", each an ordinary inference function
// with `stage_of`, profiled, placed and scaled like any other); the pipeline's own name answers
// describe (the stages' status) and delete (every stage). Routes carry `pipeline`, `stage`,
// `stages` so the gateway chains the stages. Scaling: when the stages' policy set makes a
// core::PipelineScaler (QUART), it replaces the stages' own scalers: each load report gives it
// one PipelineStageSample per stage (the gateway's rps, queue, inter-arrival CV, mean sojourn;
// the controller's ready/starting counts), and its per-stage replica deltas go through the
// normal start / drain path (Reconcile), scale-outs granted across the stages in
// core::ScaleOutOrder's order (the simulator's order). CPU-worker deltas are logged and ignored: the platform
// runs no CPU workers. Cache-aware placement: while a pipeline is deployed, each node poll also
// reads the agent's parameter store (GET /agent/v1/params); a new instance's
// InstanceDemand::cached_on lists the nodes whose store holds the function's parameters (ready,
// under the function's name: "pipe-s1"), so QUART's placement prefers them (§6). Runs on the
// controller's loop, like the rest of ControllerCore.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

#include "core/serving/scale_out.h"
#include "runtime/common/log.h"
#include "runtime/controller/agent_api.h"
#include "runtime/controller/controller_core.h"
#include "runtime/spec/function_spec.h"

namespace sluice::runtime {

using nlohmann::json;

std::vector<const ControllerFunction*> ControllerCore::PipelineStages(
    const std::string& name) const {
  std::vector<const ControllerFunction*> out;
  for (const auto& [fname, f] : functions_) {
    if (f.record.spec.stage_of && f.record.spec.stage_of->pipeline == name)
      out.push_back(&f);
  }
  std::sort(out.begin(), out.end(), [](const ControllerFunction* a, const ControllerFunction* b) {
    return a->record.spec.stage_of->index < b->record.spec.stage_of->index;
  });
  return out;
}

std::optional<http::Response> ControllerCore::DeployPipeline(const FunctionSpec& spec) {
  if (!spec.pipeline) {
    if (spec.stage_of || PipelineStages(spec.name).empty())
      return std::nullopt;
    return http::ErrorResponse(409, absl::StrCat("'", spec.name, "' is a pipeline"));
  }
  if (functions_.contains(spec.name)) {
    return http::ErrorResponse(
        409, absl::StrCat("function '", spec.name, "' exists and is not a pipeline"));
  }
  absl::StatusOr<std::vector<FunctionSpec>> stages = ExpandPipeline(spec);
  if (!stages.ok())
    return http::ErrorResponse(400, std::string(stages.status().message()));
  // All or nothing where it can be known up front: a clashing stage name fails before any start.
  for (const FunctionSpec& s : *stages) {
    auto it = functions_.find(s.name);
    if (it != functions_.end() && !(it->second.record.spec == s)) {
      return http::ErrorResponse(409, absl::StrCat("pipeline '", spec.name, "': stage function '",
                                                   s.name, "' exists with a different spec"));
    }
  }
  const size_t before = PipelineStages(spec.name).size();
  for (const FunctionSpec& s : *stages) {
    http::Response r = Deploy(FunctionSpecToYaml(s));
    if (r.status >= 300)
      return r;
  }
  std::optional<http::Response> out = DescribePipeline(spec.name);
  out->status = before == stages->size() ? 200 : 201;  // the same pipeline again: idempotent
  return out;
}

std::optional<http::Response> ControllerCore::DescribePipeline(const std::string& name) const {
  const std::vector<const ControllerFunction*> stages = PipelineStages(name);
  if (stages.empty())
    return std::nullopt;
  json list = json::array();
  std::set<FunctionState> states;
  for (const ControllerFunction* f : stages) {
    list.push_back(StatusJson(*f));
    states.insert(f->record.state);
  }
  const int count = stages.front()->record.spec.stage_of->count;
  // The worst stage's state: failed, deleting, profiling; "incomplete" when a stage is missing.
  std::string state = "ready";
  for (FunctionState s :
       {FunctionState::kProfiling, FunctionState::kDeleting, FunctionState::kFailed}) {
    if (states.contains(s))
      state = FunctionStateName(s);
  }
  if (static_cast<int>(stages.size()) < count && state == "ready")
    state = "incomplete";
  auto p = pipelines_.find(name);
  const std::string scaler = p != pipelines_.end() && p->second.scaler != nullptr
                                 ? std::string(p->second.scaler->name())
                                 : std::string();
  return http::JsonResponse(200,
                            json{{"name", name},
                                 {"kind", "pipeline"},
                                 {"state", state},
                                 {"stage_count", count},
                                 {"slo_ms", stages.front()->record.spec.stage_of->pipeline_slo_ms},
                                 {"policy", stages.front()->record.spec.policy},
                                 {"pipeline_scaler", scaler},
                                 {"stages", std::move(list)}}
                                .dump());
}

bool ControllerCore::DeletePipeline(const std::string& name, http::Responder& respond) {
  std::vector<std::string> names;
  for (const ControllerFunction* f : PipelineStages(name))
    names.push_back(f->record.spec.name);
  if (names.empty())
    return false;
  pipelines_.erase(name);
  struct Pending {
    http::Responder respond;
    int left = 0;
    std::string error;
  };
  auto pending = std::make_shared<Pending>();
  pending->respond = std::move(respond);
  pending->left = static_cast<int>(names.size());
  for (const std::string& stage : names) {
    Delete(stage, http::Responder([pending, name, names, stage](http::Response r) {
             if (r.status != 200)
               pending->error = absl::StrCat("stage '", stage, "': ", r.body);
             if (--pending->left > 0)
               return;
             if (!pending->error.empty()) {
               pending->respond(http::ErrorResponse(500, pending->error));
               return;
             }
             pending->respond(
                 http::JsonResponse(200, json{{"deleted", name}, {"stages", names}}.dump()));
           }));
  }
  return true;
}

void ControllerCore::AddStageFields(const ControllerFunction& f, json& route) const {
  if (!f.record.spec.stage_of)
    return;
  route["pipeline"] = f.record.spec.stage_of->pipeline;
  route["stage"] = f.record.spec.stage_of->index;
  route["stages"] = f.record.spec.stage_of->count;
}

core::PipelineScaler* ControllerCore::PipelineScalerFor(const std::string& pipeline) {
  const std::vector<const ControllerFunction*> stages = PipelineStages(pipeline);
  std::vector<common::FunctionId> ids;
  for (const ControllerFunction* f : stages) {
    if (f->record.state != FunctionState::kReady || !f->record.profile || !f->policy)
      return nullptr;  // not all ready, or plain dilu (no set, so no pipeline scaler)
    ids.push_back(f->id);
  }
  if (ids.empty() || static_cast<int>(ids.size()) != stages.front()->record.spec.stage_of->count)
    return nullptr;
  ControllerPipeline& p = pipelines_[pipeline];
  if (p.stage_ids == ids)
    return p.scaler.get();  // made before (null: the set makes none)
  std::vector<core::FunctionTraits> traits;
  std::vector<core::PipelineStageTraits> stage_traits;
  for (const ControllerFunction* f : stages) {
    traits.push_back(Traits(*f));
    core::PipelineStageTraits t;
    t.latency_target = absl::Microseconds(*f->record.spec.slo_ms * 1000.0);
    stage_traits.push_back(t);  // cpu_slowdown 0: no CPU workers on the platform
  }
  const absl::Duration slo =
      absl::Microseconds(stages.front()->record.spec.stage_of->pipeline_slo_ms * 1000.0);
  p.stage_ids = std::move(ids);
  p.scaler = stages.front()->policy->MakePipelineScaler(traits, stage_traits, slo);
  if (p.scaler != nullptr) {
    LogInfo("controller", "pipeline '", pipeline, "': ", stages.size(), " stages scaled by ",
            std::string(p.scaler->name()));
  }
  return p.scaler.get();
}

std::set<std::string> ControllerCore::DrivePipelines(const json& entries, absl::Time now) {
  std::map<std::string, const json*> by_name;
  std::set<std::string> pipelines;
  for (const json& e : entries) {
    const std::string name = e["name"].get<std::string>();
    by_name[name] = &e;
    auto it = functions_.find(name);
    if (it != functions_.end() && it->second.record.spec.stage_of)
      pipelines.insert(it->second.record.spec.stage_of->pipeline);
  }
  std::set<std::string> driven;
  for (const std::string& pipeline : pipelines) {
    core::PipelineScaler* scaler = PipelineScalerFor(pipeline);
    if (scaler == nullptr)
      continue;
    std::vector<core::PipelineStageSample> samples;
    for (const ControllerFunction* f : PipelineStages(pipeline)) {
      driven.insert(f->record.spec.name);
      core::PipelineStageSample s;
      auto e = by_name.find(f->record.spec.name);
      if (e != by_name.end()) {
        const json& j = *e->second;
        s.arrival_rps = j["rps"].get<double>();
        s.queue_length = j.value("queued", 0.0);
        s.arrival_cv = j.contains("arrival_cv") && j["arrival_cv"].is_number()
                           ? j["arrival_cv"].get<double>()
                           : 1.0;
        if (j.contains("latency_ms") && j["latency_ms"].is_number())
          s.measured_latency = absl::Microseconds(j["latency_ms"].get<double>() * 1000.0);
      }
      for (const ControllerInstance* i : Active(f->record.spec.name))
        (i->state == "ready" ? s.ready_replicas : s.starting_replicas) += 1;
      samples.push_back(s);
    }
    scaler->Observe(samples, now);
    ApplyPipelineDecision(pipeline, scaler->Decide(now, /*free_cpu_cores=*/0), samples);
  }
  return driven;
}

// Per stage: the key flag, the new desired count; stages at or above their desired count
// reconcile at once (drains first: their GPUs go back to the cluster), the rest are granted
// their replicas together in core::ScaleOutOrder's order (GrantStageScaleOuts).
void ControllerCore::ApplyPipelineDecision(const std::string& pipeline,
                                           const core::PipelineDecision& d,
                                           const std::vector<core::PipelineStageSample>& samples) {
  const std::vector<const ControllerFunction*> stages = PipelineStages(pipeline);
  std::vector<ControllerFunction*> fs;
  std::vector<core::ScaleOutNeed> needs;
  for (size_t i = 0; i < stages.size() && i < d.stages.size(); ++i) {
    ControllerFunction& f = functions_.at(stages[i]->record.spec.name);
    const core::PipelineStageDecision& s = d.stages[i];
    f.key_stage = s.key;
    if (s.cpu_worker_delta != 0) {
      LogInfo("controller", "pipeline '", pipeline, "' stage ", i, ": CPU-worker delta ",
              s.cpu_worker_delta, " ignored (the platform runs no CPU workers)");
    }
    const int active = static_cast<int>(Active(f.record.spec.name).size());
    if (s.replica_delta != 0)
      f.desired = std::clamp(active + s.replica_delta, f.record.min(), f.record.max());
    // Short of desired also restarts what a failed start left missing.
    if (f.desired <= active)
      Reconcile(f, /*cold_start=*/true);
    fs.push_back(&f);
    needs.push_back({i < samples.size() ? samples[i].queue_length : 0.0, active,
                     std::max(0, f.desired - active)});
  }
  GrantStageScaleOuts(fs, std::move(needs));
}

// One replica at a time: the chosen stage reconciles towards one more than it has (its cold
// start counted there when it had none), then its desired count is put back; a stage whose
// start found no room is refused for this round and stays unschedulable until a later
// reconcile, as before.
void ControllerCore::GrantStageScaleOuts(const std::vector<ControllerFunction*>& stages,
                                         std::vector<core::ScaleOutNeed> needs) {
  core::ScaleOutOrder order(std::move(needs));
  for (int j = order.Next(); j >= 0; j = order.Next()) {
    ControllerFunction& f = *stages[static_cast<size_t>(j)];
    const int target = f.desired;
    const size_t before = Active(f.record.spec.name).size();
    f.desired = static_cast<int>(before) + 1;
    Reconcile(f, /*cold_start=*/true);
    f.desired = target;
    if (Active(f.record.spec.name).size() > before) {
      order.Granted(j);
    } else {
      order.Refused(j);
    }
  }
}

void ControllerCore::PollParams(size_t a) {
  ControllerAgent& agent = agents_[a];
  if (agent.params_poll_in_flight)
    return;
  const bool any_pipeline = std::any_of(functions_.begin(), functions_.end(), [](const auto& kv) {
    return kv.second.record.spec.stage_of.has_value();
  });
  if (!any_pipeline)
    return;
  agent.params_poll_in_flight = true;
  client_.Send(agent.endpoint, AgentRequest("GET", "/agent/v1/params"), absl::Seconds(2),
               [this, a](absl::StatusOr<http::Response> r) {
                 ControllerAgent& ag = agents_[a];
                 ag.params_poll_in_flight = false;
                 if (!r.ok())
                   return;  // unreachable: keep what it said last
                 std::set<std::string> models;
                 // 404: the agent runs without a parameter store; it caches nothing.
                 const json j = r->status == 200 ? json::parse(r->body, nullptr, false) : json();
                 if (j.is_object() && j.contains("models") && j["models"].is_array()) {
                   for (const json& m : j["models"]) {
                     if (m.is_object() && m.value("ready", false) && m.contains("model") &&
                         m["model"].is_string())
                       models.insert(m["model"].get<std::string>());
                   }
                 }
                 ag.cached_models = std::move(models);
               });
}

std::vector<core::NodeId> ControllerCore::CachedOn(const FunctionSpec& spec) const {
  std::vector<core::NodeId> out;
  for (size_t a = 0; a < agents_.size(); ++a) {
    if (agents_[a].cached_models.contains(spec.name))
      out.push_back(core::NodeId(static_cast<int64_t>(a)));  // agent a is cluster node a
  }
  return out;
}

}  // namespace sluice::runtime
