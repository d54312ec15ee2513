// FakeAgent's LLM instance routes: GET /sluice/v1/stats from the counters the test sets and
// POST /sluice/v1/role, as examples/llm answers them (README "LLM instance API").
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runtime/controller/testing/fake_agent.h"

namespace sluice::runtime {

using nlohmann::json;

void FakeAgent::SetLlmStats(int64_t id, int64_t prompt_tokens_total,
                            int64_t generated_tokens_total, int64_t kv_used_tokens) {
  absl::MutexLock lock(&mu_);
  FakeInstance& i = instances_[id];
  i.prompt_tokens_total = prompt_tokens_total;
  i.generated_tokens_total = generated_tokens_total;
  i.kv_used_tokens = kv_used_tokens;
}

void FakeAgent::SetRefuseRole(int64_t id, bool refuse) {
  absl::MutexLock lock(&mu_);
  instances_[id].refuse_role = refuse;
}

void FakeAgent::AddLlmRoutes(http::Router& r, int64_t id) {
  r.Handle("GET", "/sluice/v1/stats", [this, id](http::Request&, http::Responder respond) {
    absl::MutexLock lock(&mu_);
    const FakeInstance& i = instances_[id];
    respond(http::JsonResponse(200, json{{"role", i.role},
                                         {"model", "llama2-7b"},
                                         {"kv_capacity_tokens", i.kv_capacity_tokens},
                                         {"kv_used_tokens", i.kv_used_tokens},
                                         {"running", 0},
                                         {"waiting", 0},
                                         {"prompt_tokens_total", i.prompt_tokens_total},
                                         {"generated_tokens_total", i.generated_tokens_total}}
                                        .dump()));
  });
  r.Handle("POST", "/sluice/v1/role", [this, id](http::Request& req, http::Responder respond) {
    const json b = json::parse(req.body, nullptr, false);
    if (b.is_discarded() || !b.contains("role") || !b["role"].is_string())
      return respond(http::ErrorResponse(400, "role: body must be {\"role\": ...}"));
    absl::MutexLock lock(&mu_);
    FakeInstance& i = instances_[id];
    if (i.refuse_role)
      return respond(http::ErrorResponse(409, "role: holding KV"));
    const std::string previous = i.role;
    i.role = b["role"].get<std::string>();
    ++i.role_switches;
    respond(http::JsonResponse(200, json{{"previous", previous}, {"role", i.role}}.dump()));
  });
}

}  // namespace sluice::runtime
