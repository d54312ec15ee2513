// ParseFunctionSpec / LoadFunctionSpec: strict validation of one function's YAML spec. yaml-cpp
// exceptions are caught here, at the boundary, and become InputErrors with their line.
#include "runtime/spec/function_spec.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/registry/policy_registry.h"
#include "runtime/spec/spec_parts.h"
#include "runtime/spec/yaml_reader.h"

namespace sluice::runtime {
namespace spec_internal {

bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-')
    return false;
  for (char c : s) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-')
      return false;
  }
  return true;
}

bool IsEnvName(const std::string& s) {
  if (s.empty() || absl::ascii_isdigit(s.front()))
    return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && c != '_')
      return false;
  }
  return true;
}

absl::Status ParseIdentity(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  SLUICE_ASSIGN_OR_RETURN(YAML::Node name, r.Required(root, "", "name"));
  SLUICE_ASSIGN_OR_RETURN(spec.name, r.String(name, "name"));
  if (!IsDnsLabel(spec.name)) {
    return r.Error(name, "name",
                   "must be 1-63 chars of [a-z0-9-], starting and ending alphanumeric");
  }
  SLUICE_ASSIGN_OR_RETURN(YAML::Node kind, r.Required(root, "", "kind"));
  SLUICE_ASSIGN_OR_RETURN(std::string kind_name, r.String(kind, "kind"));
  if (kind_name == "inference") {
    spec.kind = FunctionKind::kInference;
  } else if (kind_name == "training") {
    spec.kind = FunctionKind::kTraining;
  } else if (kind_name == "llm") {
    spec.kind = FunctionKind::kLlm;
  } else {
    return r.Error(kind, "kind", "must be one of inference, training, llm");
  }
  return absl::OkStatus();
}

absl::Status ParseLaunch(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node command = root["command"];
  const YAML::Node image = root["image"];
  if (!command.IsDefined() && !image.IsDefined() && root["pipeline"].IsDefined())
    return absl::OkStatus();  // every listed stage must then name its own (ParsePipeline)
  if (command.IsDefined() == image.IsDefined()) {
    return r.Error(command.IsDefined() ? command : root, "command",
                   "exactly one of 'command' and 'image' must be set");
  }
  if (image.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(spec.image, r.String(image, "image"));
    if (spec.image.empty())
      return r.Error(image, "image", "must not be empty");
    return absl::OkStatus();
  }
  if (!command.IsSequence() || command.size() == 0) {
    return r.Error(command, "command", "must be a non-empty list of strings");
  }
  for (std::size_t i = 0; i < command.size(); ++i) {
    const std::string field = absl::StrCat("command[", i, "]");
    SLUICE_ASSIGN_OR_RETURN(std::string arg, r.String(command[i], field));
    if (i == 0 && arg.empty())
      return r.Error(command[i], field, "must not be empty");
    spec.command.push_back(std::move(arg));
  }
  return absl::OkStatus();
}

absl::Status ParseModel(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  SLUICE_ASSIGN_OR_RETURN(YAML::Node model, r.Required(root, "", "model"));
  SLUICE_RETURN_IF_ERROR(r.CheckMap(model, "model", {"path", "name"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node path, r.Required(model, "model", "path"));
  SLUICE_ASSIGN_OR_RETURN(spec.model.path, r.String(path, "model.path"));
  if (spec.model.path.empty())
    return r.Error(path, "model.path", "must not be empty");
  if (const YAML::Node name = model["name"]; name.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(spec.model.name, r.String(name, "model.name"));
  }
  return absl::OkStatus();
}

absl::Status ParseResources(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node slo = root["slo_ms"];
  if (slo.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(double slo_ms, r.Double(slo, "slo_ms"));
    if (slo_ms <= 0)
      return r.Error(slo, "slo_ms", "must be > 0");
    spec.slo_ms = slo_ms;
  } else if (spec.kind != FunctionKind::kTraining) {
    return r.Error(root, "slo_ms",
                   absl::StrCat("is required for kind ", FunctionKindName(spec.kind)));
  }
  SLUICE_ASSIGN_OR_RETURN(YAML::Node memory, r.Required(root, "", "memory_gib"));
  SLUICE_ASSIGN_OR_RETURN(spec.memory_gib, r.Double(memory, "memory_gib"));
  if (spec.memory_gib <= 0)
    return r.Error(memory, "memory_gib", "must be > 0");
  if (const YAML::Node gpus = root["gpus"]; gpus.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(spec.gpus, r.IntIn(gpus, "gpus", 1, INT_MAX));
  }
  return absl::OkStatus();
}

absl::Status ParseBatching(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node batching = root["batching"];
  if (!batching.IsDefined())
    return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(r.CheckMap(batching, "batching", {"max_batch", "max_queue_delay_ms"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node max_batch, r.Required(batching, "batching", "max_batch"));
  SLUICE_ASSIGN_OR_RETURN(spec.batching.max_batch,
                          r.IntIn(max_batch, "batching.max_batch", 1, INT_MAX));
  if (const YAML::Node delay = batching["max_queue_delay_ms"]; delay.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(spec.batching.max_queue_delay_ms,
                            r.Double(delay, "batching.max_queue_delay_ms"));
    if (spec.batching.max_queue_delay_ms < 0) {
      return r.Error(delay, "batching.max_queue_delay_ms", "must be >= 0");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseAutoscaling(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node scaling = root["autoscaling"];
  if (!scaling.IsDefined())
    return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(r.CheckMap(scaling, "autoscaling", {"min", "max"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node min, r.Required(scaling, "autoscaling", "min"));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node max, r.Required(scaling, "autoscaling", "max"));
  SLUICE_ASSIGN_OR_RETURN(spec.autoscaling.min, r.IntIn(min, "autoscaling.min", 0, INT_MAX));
  SLUICE_ASSIGN_OR_RETURN(spec.autoscaling.max, r.IntIn(max, "autoscaling.max", 1, INT_MAX));
  if (spec.autoscaling.min > spec.autoscaling.max) {
    return r.Error(min, "autoscaling.min", "must be <= autoscaling.max");
  }
  return absl::OkStatus();
}

absl::Status ParseQuota(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node quota = root["quota"];
  if (!quota.IsDefined())
    return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(r.CheckMap(quota, "quota", {"request", "limit", "time_quota"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node request, r.Required(quota, "quota", "request"));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node limit, r.Required(quota, "quota", "limit"));
  QuotaSpec q;
  SLUICE_ASSIGN_OR_RETURN(q.request, r.Double(request, "quota.request"));
  SLUICE_ASSIGN_OR_RETURN(q.limit, r.Double(limit, "quota.limit"));
  if (q.request <= 0)
    return r.Error(request, "quota.request", "must be > 0");
  if (q.limit > 1)
    return r.Error(limit, "quota.limit", "must be <= 1");
  if (q.request > q.limit)
    return r.Error(request, "quota.request", "must be <= quota.limit");
  if (const YAML::Node tq = quota["time_quota"]; tq.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(q.time_quota, r.Double(tq, "quota.time_quota"));
    if (!(q.time_quota > 0 && q.time_quota <= 1))
      return r.Error(tq, "quota.time_quota", "must be in (0, 1]");
  }
  spec.quota = q;
  return absl::OkStatus();
}

absl::Status ParseQueue(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node queue = root["queue"];
  if (!queue.IsDefined())
    return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(r.CheckMap(queue, "queue", {"max_length", "timeout_ms"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node length, r.Required(queue, "queue", "max_length"));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node timeout, r.Required(queue, "queue", "timeout_ms"));
  QueueSpec q;
  SLUICE_ASSIGN_OR_RETURN(q.max_length, r.IntIn(length, "queue.max_length", 1, INT_MAX));
  SLUICE_ASSIGN_OR_RETURN(q.timeout_ms, r.Double(timeout, "queue.timeout_ms"));
  if (q.timeout_ms <= 0)
    return r.Error(timeout, "queue.timeout_ms", "must be > 0");
  spec.queue = q;
  return absl::OkStatus();
}

absl::Status ParseEnv(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node env = root["env"];
  if (!env.IsDefined())
    return absl::OkStatus();
  if (!env.IsMap())
    return r.Error(env, "env", "must be a mapping");
  for (const auto& entry : env) {
    SLUICE_ASSIGN_OR_RETURN(std::string key, r.String(entry.first, "env"));
    const std::string field = Join("env", key);
    if (!IsEnvName(key))
      return r.Error(entry.first, field, "must match [A-Za-z_][A-Za-z0-9_]*");
    SLUICE_ASSIGN_OR_RETURN(std::string value, r.String(entry.second, field));
    if (!spec.env.emplace(key, std::move(value)).second) {
      return r.Error(entry.first, field, "duplicate key");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseTraining(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node training = root["training"];
  if (spec.kind != FunctionKind::kTraining) {
    if (training.IsDefined()) {
      return r.Error(
          training, "training",
          absl::StrCat("only allowed for kind training, not ", FunctionKindName(spec.kind)));
    }
    return absl::OkStatus();
  }
  if (!training.IsDefined())
    return r.Error(root, "training", "is required for kind training");
  SLUICE_RETURN_IF_ERROR(r.CheckMap(training, "training", {"workers", "iterations"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node workers, r.Required(training, "training", "workers"));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node iters, r.Required(training, "training", "iterations"));
  TrainingSpec t;
  SLUICE_ASSIGN_OR_RETURN(t.workers, r.IntIn(workers, "training.workers", 1, INT_MAX));
  SLUICE_ASSIGN_OR_RETURN(t.iterations, r.Int(iters, "training.iterations"));
  if (t.iterations < 1)
    return r.Error(iters, "training.iterations", "must be >= 1");
  spec.training = t;
  return absl::OkStatus();
}

// `llm: {disaggregated: bool, prefill: N, decode: M}`: kind llm only; pool sizes iff
// disaggregated.
absl::Status ParseLlm(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node llm = root["llm"];
  if (!llm.IsDefined())
    return absl::OkStatus();
  if (spec.kind != FunctionKind::kLlm) {
    return r.Error(llm, "llm",
                   absl::StrCat("only allowed for kind llm, not ", FunctionKindName(spec.kind)));
  }
  SLUICE_RETURN_IF_ERROR(r.CheckMap(llm, "llm", {"disaggregated", "prefill", "decode"}));
  LlmSpec l;
  if (const YAML::Node d = llm["disaggregated"]; d.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(std::string text, r.String(d, "llm.disaggregated"));
    if (text != "true" && text != "false")
      return r.Error(d, "llm.disaggregated", "must be true or false");
    l.disaggregated = text == "true";
  }
  for (const char* pool : {"prefill", "decode"}) {
    const YAML::Node n = llm[pool];
    const std::string field = Join("llm", pool);
    if (!l.disaggregated) {
      if (n.IsDefined())
        return r.Error(n, field, "only allowed with disaggregated: true");
      continue;
    }
    if (!n.IsDefined())
      return r.Error(llm, field, "is required with disaggregated: true");
    SLUICE_ASSIGN_OR_RETURN(int count, r.IntIn(n, field, 1, 1024));
    (std::string(pool) == "prefill" ? l.prefill : l.decode) = count;
  }
  spec.llm = l;
  return absl::OkStatus();
}

// `policy` (a registry name) and `policy_params` (a flat map), checked by building the set: the
// policy's own ParamReader names the line and key of a param it rejects.
absl::Status ParsePolicy(const YamlReader& r, const std::string& file, const YAML::Node& root,
                         FunctionSpec& spec) {
  const YAML::Node policy = root["policy"];
  if (policy.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(spec.policy, r.String(policy, "policy"));
    const std::vector<std::string> known = core::KnownPolicies();
    if (std::find(known.begin(), known.end(), spec.policy) == known.end()) {
      return r.Error(policy, "policy",
                     absl::StrCat("unknown policy '", spec.policy,
                                  "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  if (const YAML::Node params = root["policy_params"]; params.IsDefined()) {
    if (!params.IsMap())
      return r.Error(params, "policy_params", "must be a mapping");
    for (const auto& entry : params) {
      SLUICE_ASSIGN_OR_RETURN(std::string key, r.String(entry.first, "policy_params"));
      const std::string field = Join("policy_params", key);
      SLUICE_ASSIGN_OR_RETURN(std::string value, r.String(entry.second, field));
      for (const PolicyParamSpec& p : spec.policy_params) {
        if (p.key == key)
          return r.Error(entry.first, field, "duplicate key");
      }
      spec.policy_params.push_back({key, std::move(value), entry.first.Mark().line + 1});
    }
  }
  return core::MakePolicySet(spec.policy, CorePolicyParams(spec), file).status();
}

absl::StatusOr<FunctionSpec> ParseRoot(const YamlReader& r, const std::string& file,
                                       const YAML::Node& root, std::string_view default_policy) {
  SLUICE_RETURN_IF_ERROR(
      r.CheckMap(root, "",
                 {"name", "kind", "command", "image", "model", "slo_ms", "memory_gib", "gpus",
                  "batching", "autoscaling", "quota", "queue", "env", "training", "llm", "policy",
                  "policy_params", "pipeline", "stage_of"}));
  FunctionSpec spec;
  spec.policy = std::string(default_policy);
  SLUICE_RETURN_IF_ERROR(ParseIdentity(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseLaunch(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseModel(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseResources(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseBatching(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseAutoscaling(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseQuota(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseQueue(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseEnv(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseTraining(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseLlm(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParsePipeline(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParseStageOf(r, root, spec));
  SLUICE_RETURN_IF_ERROR(ParsePolicy(r, file, root, spec));
  return spec;
}

}  // namespace spec_internal

using spec_internal::ParseRoot;
using spec_internal::YamlReader;

const char* FunctionKindName(FunctionKind kind) {
  switch (kind) {
    case FunctionKind::kInference:
      return "inference";
    case FunctionKind::kTraining:
      return "training";
    case FunctionKind::kLlm:
      return "llm";
  }
  return "unknown";
}

absl::StatusOr<FunctionSpec> ParseFunctionSpec(const std::string& text, const std::string& file,
                                               std::string_view default_policy) {
  const YamlReader reader(file);
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull()) {
      return common::InputError({file, 1}, "", "empty function spec");
    }
    return ParseRoot(reader, file, root, default_policy);
  } catch (const YAML::Exception& e) {
    return common::InputError({file, e.mark.line + 1}, "", absl::StrCat("invalid YAML: ", e.msg));
  }
}

std::vector<core::PolicyParam> CorePolicyParams(const FunctionSpec& spec) {
  std::vector<core::PolicyParam> out;
  for (const PolicyParamSpec& p : spec.policy_params)
    out.push_back({p.key, p.value, p.line});
  return out;
}

absl::StatusOr<FunctionSpec> LoadFunctionSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot open function spec '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return absl::InternalError(absl::StrCat("cannot read function spec '", path, "'"));
  return ParseFunctionSpec(text.str(), path);
}

}  // namespace sluice::runtime
