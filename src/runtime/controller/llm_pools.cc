// The pure parts of the controller's P/D pools: stats parsing, per-pool load, mutation victims,
// the scaler config and the role's instance spec.
#include "runtime/controller/llm_pools.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/llm/mutation.h"
#include "core/perf/llm_perf_model.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {

using nlohmann::json;

namespace {

// Reads an optional non-negative integer member; false (and `error` naming it) when malformed.
bool ReadCount(const json& j, const char* key, int64_t& out, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return true;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    error = absl::StrCat("stats.", key, ": must be an integer >= 0");
    return false;
  }
  out = it->get<int64_t>();
  return true;
}

}  // namespace

absl::StatusOr<LlmInstanceStats> ParseLlmStats(const std::string& body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return absl::InvalidArgumentError("stats: not a JSON object");
  LlmInstanceStats s;
  auto role = j.find("role");
  if (role == j.end() || !role->is_string())
    return absl::InvalidArgumentError("stats.role: required, a string");
  s.role = role->get<std::string>();
  int64_t running = 0, waiting = 0;
  std::string error;
  const bool ok = ReadCount(j, "kv_capacity_tokens", s.kv_capacity_tokens, error) &&
                  ReadCount(j, "kv_used_tokens", s.kv_used_tokens, error) &&
                  ReadCount(j, "running", running, error) &&
                  ReadCount(j, "waiting", waiting, error) &&
                  ReadCount(j, "waiting_prompt_tokens", s.waiting_prompt_tokens, error) &&
                  ReadCount(j, "prompt_tokens_total", s.prompt_tokens_total, error) &&
                  ReadCount(j, "generated_tokens_total", s.generated_tokens_total, error);
  if (!ok)
    return absl::InvalidArgumentError(error);
  s.running = static_cast<int>(running);
  s.waiting = static_cast<int>(waiting);
  return s;
}

void AddStats(LlmPools::Polled& p, const LlmInstanceStats& s, absl::Time at) {
  const double dt = p.has ? absl::ToDoubleSeconds(at - p.at) : 0;
  auto rate = [dt](int64_t before, int64_t now) {
    return dt > 0 && now >= before ? static_cast<double>(now - before) / dt : 0.0;
  };
  p.prompt_tokens_per_s =
      p.has ? rate(p.stats.prompt_tokens_total, s.prompt_tokens_total) : 0;
  p.generated_tokens_per_s =
      p.has ? rate(p.stats.generated_tokens_total, s.generated_tokens_total) : 0;
  p.stats = s;
  p.at = at;
  p.has = true;
}

core::llm::LlmLoad PoolLoad(const std::vector<LlmInstanceView>& instances, absl::Time now,
                            absl::Duration window) {
  core::llm::LlmLoad load;
  load.now = now;
  const double window_s = std::max(absl::ToDoubleSeconds(window), 1e-3);
  double kv_sum = 0;
  int kv_n = 0;
  for (const LlmInstanceView& i : instances) {
    if (i.role == kPrefillRole) {
      ++load.prefill_instances;
      if (i.has_stats) {
        load.prefill_tokens_per_s += i.prompt_tokens_per_s +
                                     static_cast<double>(i.stats.waiting_prompt_tokens) / window_s;
      }
    } else if (i.role == kDecodeRole) {
      ++load.decode_instances;
      if (i.has_stats) {
        load.decode_tokens_per_s += i.generated_tokens_per_s;
        if (i.stats.kv_capacity_tokens > 0) {
          kv_sum += static_cast<double>(i.stats.kv_used_tokens) /
                    static_cast<double>(i.stats.kv_capacity_tokens);
          ++kv_n;
        }
      }
    }
  }
  load.kv_usage = kv_n > 0 ? kv_sum / kv_n : 0;
  return load;
}

std::vector<int64_t> PickMutations(const std::vector<LlmInstanceView>& instances, int n) {
  std::vector<core::llm::MutationCandidate> candidates;
  for (const LlmInstanceView& i : instances) {
    if (i.role != kPrefillRole || !i.ready || i.mutating) continue;
    candidates.push_back({i.id, i.has_stats ? i.stats.waiting_prompt_tokens : 0,
                          i.stats.running + i.stats.waiting});
  }
  return core::llm::PickMutationVictims(candidates, static_cast<int>(candidates.size()), n);
}

absl::StatusOr<core::llm::LlmScalerConfig> LlmPoolScalerConfig(const FunctionSpec& spec,
                                                               int max_instances,
                                                               const LlmControllerOptions& o) {
  core::llm::LlmScalerConfig c;
  c.window = o.window;
  c.scale_down_timeout = o.scale_down_timeout;
  c.prefill_tokens_per_s_per_instance = o.prefill_tokens_per_s;
  c.decode_tokens_per_s_per_instance = o.decode_tokens_per_s;
  c.kv_usage_upper = o.kv_usage_upper;
  c.lower_fraction = o.lower_fraction;
  c.allow_mutation = o.mutation;
  const int prefill = spec.llm ? spec.llm->prefill : 1;
  const int decode = spec.llm ? spec.llm->decode : 1;
  c.min_prefill = 1;
  c.min_decode = 1;
  c.max_prefill = std::max({1, max_instances, prefill});
  c.max_decode = std::max({1, max_instances, decode});
  if (c.prefill_tokens_per_s_per_instance <= 0 || c.decode_tokens_per_s_per_instance <= 0) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::LlmPerfModel> model,
                            core::BuiltinLlmModel(spec.model.name, o.gpu));
    c = core::llm::FillProfiledBounds(c, *model, core::llm::LlmBoundsShape{});
  }
  SLUICE_RETURN_IF_ERROR(core::llm::ValidateScalerConfig(c));
  return c;
}

FunctionSpec SpecForRole(const FunctionSpec& spec, const std::string& role) {
  FunctionSpec out = spec;
  if (role.empty())
    return out;
  if (!out.command.empty()) {
    out.command.push_back("--role");
    out.command.push_back(role);
  }
  out.env["SLUICE_LLM_ROLE"] = role;
  return out;
}

bool IsDisaggregated(const FunctionSpec& spec) {
  return spec.kind == FunctionKind::kLlm && spec.llm && spec.llm->disaggregated;
}

}  // namespace sluice::runtime
