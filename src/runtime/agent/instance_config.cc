// Strict parsing of the agent API's bodies and the instance environment. nlohmann::json is used
// without exceptions: every value's type is checked before it is read.
#include "runtime/agent/instance_config.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

absl::Status FieldError(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("field '", field, "': ", why));
}

absl::StatusOr<Json> ParseObject(const std::string& body, const std::set<std::string>& known) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("body: not valid JSON");
  if (!j.is_object()) return absl::InvalidArgumentError("body: must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) return FieldError(key, "unknown field");
  }
  return j;
}

absl::Status ReadString(const Json& j, const std::string& name, std::string& out) {
  if (!j.contains(name)) return absl::OkStatus();
  if (!j[name].is_string()) return FieldError(name, "must be a string");
  out = j[name].get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadInt(const Json& j, const std::string& name, int64_t min, int64_t& out) {
  if (!j.contains(name)) return absl::OkStatus();
  if (!j[name].is_number_integer()) return FieldError(name, "must be an integer");
  const int64_t v = j[name].get<int64_t>();
  if (v < min) return FieldError(name, absl::StrCat("must be >= ", min, ", got ", v));
  out = v;
  return absl::OkStatus();
}

absl::Status ReadShare(const Json& j, const std::string& name, double& out) {
  if (!j.contains(name)) return absl::OkStatus();
  if (!j[name].is_number()) return FieldError(name, "must be a number");
  const double v = j[name].get<double>();
  if (!(v > 0 && v <= 1)) return FieldError(name, absl::StrCat("must be in (0, 1], got ", v));
  out = v;
  return absl::OkStatus();
}

absl::Status ReadBool(const Json& j, const std::string& name, bool& out) {
  if (!j.contains(name)) return absl::OkStatus();
  if (!j[name].is_boolean()) return FieldError(name, "must be true or false");
  out = j[name].get<bool>();
  return absl::OkStatus();
}

absl::Status ReadCommandAndEnv(const Json& j, StartInstance& s) {
  if (!j.contains("command")) return FieldError("command", "required");
  const Json& c = j["command"];
  if (!c.is_array() || c.empty()) return FieldError("command", "must be a non-empty array");
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c[i].is_string()) return FieldError(absl::StrCat("command[", i, "]"), "must be a string");
    s.command.push_back(c[i].get<std::string>());
  }
  if (s.command[0].empty()) return FieldError("command[0]", "must name a program");
  if (!j.contains("env")) return absl::OkStatus();
  if (!j["env"].is_object()) return FieldError("env", "must be an object of strings");
  for (const auto& [k, v] : j["env"].items()) {
    if (k.empty() || k.find('=') != std::string::npos) {
      return FieldError(absl::StrCat("env.", k), "bad variable name");
    }
    if (!v.is_string()) return FieldError(absl::StrCat("env.", k), "must be a string");
    s.env[k] = v.get<std::string>();
  }
  return absl::OkStatus();
}

// `gpus`: a non-empty array of distinct, non-empty uuids whose first is `gpu` when both are set.
absl::Status ReadGpus(const Json& j, StartInstance& s) {
  if (!j.contains("gpus")) return absl::OkStatus();
  const Json& g = j["gpus"];
  if (!g.is_array() || g.empty()) return FieldError("gpus", "must be a non-empty array");
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string field = absl::StrCat("gpus[", i, "]");
    if (!g[i].is_string() || g[i].get<std::string>().empty()) {
      return FieldError(field, "must be a GPU uuid");
    }
    const std::string uuid = g[i].get<std::string>();
    if (std::find(s.gpus.begin(), s.gpus.end(), uuid) != s.gpus.end()) {
      return FieldError(field, absl::StrCat("duplicate GPU '", uuid, "'"));
    }
    s.gpus.push_back(uuid);
  }
  if (!s.gpu.empty() && s.gpus[0] != s.gpu) {
    return FieldError("gpus[0]", absl::StrCat("must equal gpu '", s.gpu, "', got '", s.gpus[0],
                                              "'"));
  }
  return absl::OkStatus();
}

absl::Status CheckRequestLimit(double request, double limit) {
  if (request > limit) {
    return FieldError("request", absl::StrCat("must be <= limit (", request, " > ", limit, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StartInstance> ParseStartInstance(const std::string& body) {
  SLUICE_ASSIGN_OR_RETURN(
      Json j, ParseObject(body, {"id", "function", "kind", "command", "env", "gpu", "gpus",
                                 "request", "limit", "time_quota", "slo_sensitive",
                                 "mem_limit_bytes", "restart", "model_path", "max_batch", "params"}));
  StartInstance s;
  if (!j.contains("id")) return FieldError("id", "required");
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "id", 0, s.id));
  if (!j.contains("function")) return FieldError("function", "required");
  SLUICE_RETURN_IF_ERROR(ReadString(j, "function", s.function));
  if (s.function.empty()) return FieldError("function", "must not be empty");
  SLUICE_RETURN_IF_ERROR(ReadString(j, "kind", s.kind));
  if (s.kind != "inference" && s.kind != "training" && s.kind != "llm") {
    return FieldError("kind", absl::StrCat("must be inference, training or llm, got '", s.kind,
                                           "'"));
  }
  SLUICE_RETURN_IF_ERROR(ReadCommandAndEnv(j, s));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "gpu", s.gpu));
  SLUICE_RETURN_IF_ERROR(ReadGpus(j, s));
  SLUICE_RETURN_IF_ERROR(ReadShare(j, "request", s.request));
  SLUICE_RETURN_IF_ERROR(ReadShare(j, "limit", s.limit));
  if (!j.contains("limit")) s.limit = std::max(s.limit, s.request);
  SLUICE_RETURN_IF_ERROR(CheckRequestLimit(s.request, s.limit));
  SLUICE_RETURN_IF_ERROR(ReadShare(j, "time_quota", s.time_quota));
  SLUICE_RETURN_IF_ERROR(ReadBool(j, "slo_sensitive", s.slo_sensitive));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "mem_limit_bytes", 0, s.mem_limit_bytes));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "restart", s.restart));
  if (s.restart != "on-failure" && s.restart != "never") {
    return FieldError("restart", absl::StrCat("must be on-failure or never, got '", s.restart,
                                              "'"));
  }
  SLUICE_RETURN_IF_ERROR(ReadString(j, "model_path", s.model_path));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "params", s.params));
  int64_t max_batch = s.max_batch;
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "max_batch", 1, max_batch));
  if (max_batch > 1 << 20) return FieldError("max_batch", "must be <= 1048576");
  s.max_batch = static_cast<int>(max_batch);
  return s;
}

absl::StatusOr<QuotaUpdate> ParseQuotaUpdate(const std::string& body, const QuotaUpdate& current) {
  SLUICE_ASSIGN_OR_RETURN(
      Json j, ParseObject(body, {"request", "limit", "time_quota", "slo_sensitive",
                                 "mem_limit_bytes"}));
  QuotaUpdate q = current;
  SLUICE_RETURN_IF_ERROR(ReadShare(j, "request", q.request));
  SLUICE_RETURN_IF_ERROR(ReadShare(j, "limit", q.limit));
  SLUICE_RETURN_IF_ERROR(CheckRequestLimit(q.request, q.limit));
  SLUICE_RETURN_IF_ERROR(ReadShare(j, "time_quota", q.time_quota));
  SLUICE_RETURN_IF_ERROR(ReadBool(j, "slo_sensitive", q.slo_sensitive));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "mem_limit_bytes", 0, q.mem_limit_bytes));
  return q;
}

absl::StatusOr<std::string> ExpandPlaceholders(const std::string& text,
                                               const PlaceholderVars& vars,
                                               const std::string& field) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find("${", pos);
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open + 2);
    if (close == std::string::npos) {
      return FieldError(field, absl::StrCat("unterminated '${' in '", text, "'"));
    }
    const std::string name = text.substr(open + 2, close - open - 2);
    auto it = vars.find(name);
    if (it == vars.end()) {
      return FieldError(field, absl::StrCat("unknown placeholder ${", name, "}"));
    }
    out.append(text, pos, open - pos).append(it->second);
    pos = close + 1;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

PlaceholderVars PlaceholdersFor(const StartInstance& s, const InstanceContext& ctx) {
  return {{"PORT", std::to_string(ctx.port)},   {"GPU", ctx.gpu_uuid},
          {"MODEL_PATH", s.model_path},         {"FUNCTION", s.function},
          {"INSTANCE", std::to_string(s.id)},  {"SLUICE_BIN_DIR", ctx.bin_dir}};
}

absl::StatusOr<std::vector<std::string>> ExpandCommand(const StartInstance& s,
                                                       const PlaceholderVars& vars) {
  std::vector<std::string> argv;
  for (size_t i = 0; i < s.command.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(std::string a,
                            ExpandPlaceholders(s.command[i], vars, absl::StrCat("command[", i,
                                                                                "]")));
    argv.push_back(std::move(a));
  }
  return argv;
}

absl::StatusOr<EnvList> BuildInstanceEnv(const StartInstance& s, const InstanceContext& ctx) {
  const std::vector<std::string> uuids =
      ctx.gpu_uuids.empty() ? std::vector<std::string>{ctx.gpu_uuid} : ctx.gpu_uuids;
  const std::vector<int> indices =
      ctx.gpu_indices.empty() ? std::vector<int>{ctx.gpu_index} : ctx.gpu_indices;
  EnvList env = {{"PORT", std::to_string(ctx.port)},
                 {"SLUICE_FUNCTION", s.function},
                 {"SLUICE_INSTANCE_ID", std::to_string(s.id)},
                 {"SLUICE_GPU_UUID", ctx.gpu_uuid},
                 {"SLUICE_GPU_UUIDS", absl::StrJoin(uuids, ",")},
                 {"SLUICE_TOKEN_SOCKET", ctx.token_socket},
                 {"LD_PRELOAD", ctx.intercept_lib},
                 {"SLUICE_MODEL_PATH", s.model_path},
                 {"SLUICE_MAX_BATCH", std::to_string(s.max_batch)}};
  if (ctx.emulated) {
    env.push_back({"LD_LIBRARY_PATH", ctx.emulated_dir});
    env.push_back({"SLUICE_REAL_LIBCUDA", ctx.emulated_dir + "/libcuda.so.1"});
    env.push_back({"SLUICE_EMU_UUID", ctx.emu_uuid});
  } else {
    env.push_back({"CUDA_VISIBLE_DEVICES", absl::StrJoin(indices, ",")});
  }
  const PlaceholderVars vars = PlaceholdersFor(s, ctx);
  for (const auto& [k, v] : s.env) {
    SLUICE_ASSIGN_OR_RETURN(std::string value, ExpandPlaceholders(v, vars, "env." + k));
    bool replaced = false;
    for (auto& [name, old] : env) {
      if (name == k) {
        old = value;
        replaced = true;
      }
    }
    if (!replaced) env.push_back({k, std::move(value)});
  }
  return env;
}

std::vector<std::string> InstanceUnsetEnv() {
  return {"SLUICE_EMU_UUID", "SLUICE_REAL_LIBCUDA", "CUDA_VISIBLE_DEVICES", "LD_PRELOAD"};
}

}  // namespace sluice::runtime
