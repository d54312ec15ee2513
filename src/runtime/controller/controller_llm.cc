// ControllerCore: prefill/decode pools of disaggregated LLM functions (llm_pools.h,
// docs/blitzscale.md "On the platform"). Pools start at the spec's sizes with --role; every
// options.llm.poll the instances' GET /sluice/v1/stats feed core::llm::LlmAutoscaler (the class
// the simulator drives), whose scale-outs/ins go through the normal start/drain path and whose
// mutations switch a prefill instance to decode: out of the routes, drain_grace, POST
// /sluice/v1/role, back in the routes with the new role. Operators mutate through
// POST /admin/v1/functions/{name}/mutate. Everything runs on the loop thread.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

#include "core/serving/scale_in.h"
#include "runtime/common/log.h"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

bool IsRole(const std::string& role) { return role == kPrefillRole || role == kDecodeRole; }

// The pool an instance counts in: its target role while it mutates.
std::string PoolOf(const ControllerInstance& i) {
  return i.mutate_to.empty() ? i.role : i.mutate_to;
}

// The mutate API's body {"instance": id, "role": "prefill"|"decode"}; a 400 naming the field.
std::optional<http::Response> ParseMutateBody(const std::string& body, int64_t& id,
                                              std::string& role) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return http::ErrorResponse(400, "body: not a JSON object");
  if (!j.contains("instance") || !j["instance"].is_number_integer())
    return http::ErrorResponse(400, "field 'instance': required, an integer id");
  if (!j.contains("role") || !j["role"].is_string() || !IsRole(j["role"].get<std::string>()))
    return http::ErrorResponse(400, "field 'role': required, prefill or decode");
  id = j["instance"].get<int64_t>();
  role = j["role"].get<std::string>();
  return std::nullopt;
}

}  // namespace

void ControllerCore::MakeLlmPools(ControllerFunction& f) {
  const FunctionSpec& spec = f.record.spec;
  const int max = f.record.max();
  auto pools = std::make_unique<LlmPools>();
  pools->prefill_desired = f.llm ? f.llm->prefill_desired : spec.llm->prefill;
  pools->decode_desired = f.llm ? f.llm->decode_desired : spec.llm->decode;
  if (f.llm) {
    pools->polled = std::move(f.llm->polled);
    pools->mutations = f.llm->mutations;
  }
  absl::StatusOr<core::llm::LlmScalerConfig> config = LlmPoolScalerConfig(spec, max, options_.llm);
  if (!options_.llm.autoscale) {
    pools->message = "pools fixed (autoscaling off)";
  } else if (!config.ok()) {
    pools->message = absl::StrCat("pools fixed: ", config.status().message());
    LogError("controller", "function '", spec.name, "': ", pools->message);
  } else {
    pools->scaler = std::make_unique<core::llm::LlmAutoscaler>(*config);
  }
  if (config.ok()) {
    pools->prefill_desired = std::clamp(pools->prefill_desired, 1, config->max_prefill);
    pools->decode_desired = std::clamp(pools->decode_desired, 1, config->max_decode);
  }
  f.llm = std::move(pools);
}

void ControllerCore::ReconcileLlm(ControllerFunction& f) {
  LlmPools& pools = *f.llm;
  std::map<std::string, std::vector<const ControllerInstance*>> by_pool;
  for (const ControllerInstance* i : Active(f.record.spec.name)) {
    if (i->role.empty())
      return;  // adopted, role not known until its first stats answer: decide nothing yet
    by_pool[PoolOf(*i)].push_back(i);
  }
  pools.prefill_desired = std::max(pools.prefill_desired, 1);
  pools.decode_desired = std::max(pools.decode_desired, 1);
  for (auto [role, desired] : {std::pair<std::string, int>{kPrefillRole, pools.prefill_desired},
                               {kDecodeRole, pools.decode_desired}}) {
    const std::vector<const ControllerInstance*>& have = by_pool[role];
    const int n = static_cast<int>(have.size());
    for (int k = n; k < desired; ++k) {
      if (!StartServing(f, /*restart=*/true, role))
        break;
    }
    if (desired < n) {
      std::vector<core::ScaleInCandidate> candidates;
      for (const ControllerInstance* i : have) {
        if (i->mutate_to.empty())  // a switching instance is not drained under its feet
          candidates.push_back({i->id, i->state == "ready", i->in_flight});
      }
      for (int64_t id : core::PickScaleIn(std::move(candidates), n - desired))
        ScaleIn(id);
    }
  }
  f.desired = pools.prefill_desired + pools.decode_desired;
  Touch();
}

std::vector<LlmInstanceView> ControllerCore::LlmViews(const ControllerFunction& f) const {
  std::vector<LlmInstanceView> views;
  for (const ControllerInstance* i : Active(f.record.spec.name)) {
    LlmInstanceView v;
    v.id = i->id;
    v.role = PoolOf(*i);
    v.ready = i->state == "ready";
    v.mutating = !i->mutate_to.empty();
    auto p = f.llm->polled.find(i->id);
    if (p != f.llm->polled.end() && p->second.has) {
      v.has_stats = true;
      v.stats = p->second.stats;
      v.prompt_tokens_per_s = p->second.prompt_tokens_per_s;
      v.generated_tokens_per_s = p->second.generated_tokens_per_s;
    }
    views.push_back(std::move(v));
  }
  return views;
}

void ControllerCore::TickLlm() {
  const absl::Time now = loop_.Now();
  for (auto& [name, f] : functions_) {
    if (!f.llm || f.record.state != FunctionState::kReady || now - f.llm->last_tick <
                                                                 options_.llm.poll)
      continue;
    f.llm->last_tick = now;
    PollLlmStats(f);
    DriveLlm(f, now);
  }
}

void ControllerCore::PollLlmStats(ControllerFunction& f) {
  std::map<int64_t, LlmPools::Polled> kept;
  for (const ControllerInstance* i : Active(f.record.spec.name)) {
    LlmPools::Polled& p = kept[i->id];
    if (auto old = f.llm->polled.find(i->id); old != f.llm->polled.end())
      p = old->second;
    absl::StatusOr<http::Endpoint> ep = http::Endpoint::Parse(i->url);
    if (i->url.empty() || i->state != "ready" || p.in_flight || !ep.ok())
      continue;
    p.in_flight = true;
    client_.Send(*ep, AgentRequest("GET", "/sluice/v1/stats"), absl::Seconds(2),
                 [this, name = f.record.spec.name, id = i->id](absl::StatusOr<http::Response> r) {
                   OnLlmStats(name, id, std::move(r));
                 });
  }
  f.llm->polled = std::move(kept);  // instances gone are forgotten
}

void ControllerCore::OnLlmStats(const std::string& function, int64_t id,
                                absl::StatusOr<http::Response> r) {
  auto f = functions_.find(function);
  if (f == functions_.end() || !f->second.llm)
    return;
  auto p = f->second.llm->polled.find(id);
  if (p == f->second.llm->polled.end())
    return;
  p->second.in_flight = false;
  if (!r.ok() || r->status != 200)
    return;
  absl::StatusOr<LlmInstanceStats> s = ParseLlmStats(r->body);
  if (!s.ok())
    return;
  AddStats(p->second, *s, loop_.Now());
  auto i = instances_.find(id);
  if (i != instances_.end() && i->second.role.empty() && IsRole(s->role)) {
    i->second.role = s->role;  // an adopted instance: its role is the one it reports
    ReconcileLlm(f->second);
  }
}

void ControllerCore::DriveLlm(ControllerFunction& f, absl::Time now) {
  LlmPools& pools = *f.llm;
  if (!pools.scaler)
    return;
  const std::vector<LlmInstanceView> views = LlmViews(f);
  for (const LlmInstanceView& v : views) {
    if (v.role.empty())
      return;  // an adopted instance whose role is not known yet
  }
  pools.scaler->Observe(PoolLoad(views, now, options_.llm.window));
  const core::llm::LlmScaleDecision d = pools.scaler->Decide(now);
  if (d.prefill_delta == 0 && d.decode_delta == 0 && d.mutate_prefill_to_decode == 0)
    return;
  LogInfo("controller", "function '", f.record.spec.name, "': prefill ", d.prefill_delta,
          ", decode ", d.decode_delta, ", mutate ", d.mutate_prefill_to_decode);
  pools.prefill_desired += d.prefill_delta;
  pools.decode_desired += d.decode_delta;
  for (int64_t id : PickMutations(views, d.mutate_prefill_to_decode)) {
    --pools.prefill_desired;
    ++pools.decode_desired;
    Mutate(id, kDecodeRole, nullptr);
  }
  ReconcileLlm(f);
}

void ControllerCore::Mutate(int64_t id, const std::string& role, MutateDone done) {
  ControllerInstance& i = instances_.at(id);
  i.mutate_to = role;
  Touch();  // out of the routes: the gateway stops sending it work of its old role
  loop_.RunAfter(options_.drain_grace, [this, id, role, done = std::move(done)]() mutable {
    auto it = instances_.find(id);
    absl::StatusOr<http::Endpoint> ep =
        it == instances_.end() ? absl::NotFoundError("gone") : http::Endpoint::Parse(it->second.url);
    if (!ep.ok()) {
      FinishMutate(id, role, ep.status(), std::move(done));
      return;
    }
    http::Request req = AgentRequest("POST", "/sluice/v1/role", json{{"role", role}}.dump());
    client_.Send(*ep, std::move(req), absl::Seconds(10),
                 [this, id, role, done = std::move(done)](absl::StatusOr<http::Response> r) mutable {
                   FinishMutate(id, role, std::move(r), std::move(done));
                 });
  });
}

void ControllerCore::FinishMutate(int64_t id, const std::string& role,
                                  absl::StatusOr<http::Response> r, MutateDone done) {
  auto it = instances_.find(id);
  http::Response answer;
  if (it == instances_.end()) {
    answer = http::ErrorResponse(409, absl::StrCat("instance: ", id, " went away while switching"));
  } else if (!r.ok() || r->status != 200) {
    const std::string why = r.ok() ? absl::StrCat("HTTP ", r->status, ": ", r->body)
                                   : std::string(r.status().message());
    LogError("controller", "instance ", id, ": role switch to ", role, " failed: ", why);
    // The instance's own refusal (4xx, e.g. decode -> prefill while holding KV) is the
    // operator's 409; an unreachable instance a 502.
    answer = http::ErrorResponse(r.ok() && r->status < 500 ? 409 : 502,
                                 absl::StrCat("instance ", id, ": role switch refused: ", why));
    it->second.mutate_to.clear();
    auto f = functions_.find(it->second.function);
    if (f != functions_.end() && f->second.llm) {  // the pools take back the planned switch
      LlmPools& p = *f->second.llm;
      (role == kDecodeRole ? p.decode_desired : p.prefill_desired) -= 1;
      (role == kDecodeRole ? p.prefill_desired : p.decode_desired) += 1;
    }
  } else {
    ControllerInstance& i = it->second;
    const std::string previous = i.role;
    i.role = role;
    i.mutate_to.clear();
    auto f = functions_.find(i.function);
    if (f != functions_.end() && f->second.llm)
      ++f->second.llm->mutations;
    LogInfo("controller", "instance ", id, " of '", i.function, "': ", previous, " -> ", role);
    answer = http::JsonResponse(
        200, json{{"instance", id}, {"previous", previous}, {"role", role}}.dump());
  }
  Touch();  // back in the routes, with its new role
  if (done)
    done(std::move(answer));
}

void ControllerCore::MutateApi(const std::string& name, const std::string& body,
                               http::Responder respond) {
  auto it = functions_.find(name);
  if (it == functions_.end())
    return respond(http::ErrorResponse(404, absl::StrCat("no function '", name, "'")));
  ControllerFunction& f = it->second;
  if (!f.llm) {
    return respond(http::ErrorResponse(
        400, absl::StrCat("function '", name, "': not a disaggregated LLM function (spec "
                                              "llm.disaggregated) or not ready")));
  }
  int64_t id = 0;
  std::string role;
  if (std::optional<http::Response> bad = ParseMutateBody(body, id, role))
    return respond(*std::move(bad));
  auto i = instances_.find(id);
  if (i == instances_.end() || i->second.function != name || i->second.profiling ||
      i->second.removing) {
    return respond(http::ErrorResponse(
        404, absl::StrCat("field 'instance': no serving instance ", id, " of '", name, "'")));
  }
  if (i->second.state != "ready" || !i->second.mutate_to.empty() || i->second.role.empty()) {
    return respond(http::ErrorResponse(
        409, absl::StrCat("instance ", id, ": not ready to switch (state ", i->second.state,
                          i->second.mutate_to.empty() ? "" : ", switching", ")")));
  }
  if (i->second.role == role) {
    return respond(
        http::ErrorResponse(400, absl::StrCat("field 'role': instance ", id, " is already ", role)));
  }
  // The pools follow the operator, so reconciling does not undo the switch.
  int& from = role == kDecodeRole ? f.llm->prefill_desired : f.llm->decode_desired;
  int& to = role == kDecodeRole ? f.llm->decode_desired : f.llm->prefill_desired;
  --from;
  ++to;
  if (f.llm->scaler)  // its window and timers restart, so it does not undo the switch at once
    f.llm->scaler = std::make_unique<core::llm::LlmAutoscaler>(f.llm->scaler->config());
  Mutate(id, role, [r = std::make_shared<http::Responder>(std::move(respond))](
                       http::Response answer) { (*r)(std::move(answer)); });
}

json ControllerCore::LlmStatusJson(const ControllerFunction& f) const {
  const LlmPools& p = *f.llm;
  json j{{"prefill_desired", p.prefill_desired},
         {"decode_desired", p.decode_desired},
         {"mutations", p.mutations},
         {"autoscaler", p.scaler != nullptr},
         {"message", p.message}};
  if (p.scaler) {
    const core::llm::LlmScalerConfig& c = p.scaler->config();
    j["prefill_tokens_per_s_per_instance"] = c.prefill_tokens_per_s_per_instance;
    j["decode_tokens_per_s_per_instance"] = c.decode_tokens_per_s_per_instance;
    j["kv_usage_upper"] = c.kv_usage_upper;
    j["max_prefill"] = c.max_prefill;
    j["max_decode"] = c.max_decode;
  }
  return j;
}

}  // namespace sluice::runtime
