// Strict reader of the controller's route table: each field is checked for type and range and an
// error names its path, so a controller bug shows up in the gateway's log as one clear line.
#include "runtime/gateway/route_table.h"

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& at, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat("routes: ", at, ": ", msg));
}

absl::Status GetString(const json& o, const std::string& at, const char* key, bool required,
                       std::string& out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null())
    return required ? Bad(absl::StrCat(at, ".", key), "missing") : absl::OkStatus();
  if (!it->is_string())
    return Bad(absl::StrCat(at, ".", key), "must be a string");
  out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status GetNumber(const json& o, const std::string& at, const char* key, double min,
                       double& out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null())
    return absl::OkStatus();
  if (!it->is_number() || it->get<double>() < min)
    return Bad(absl::StrCat(at, ".", key), absl::StrCat("must be a number >= ", min));
  out = it->get<double>();
  return absl::OkStatus();
}

absl::Status GetInt(const json& o, const std::string& at, const char* key, int64_t min,
                    int64_t& out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null())
    return absl::OkStatus();
  if (!it->is_number_integer() || it->get<int64_t>() < min)
    return Bad(absl::StrCat(at, ".", key), absl::StrCat("must be an integer >= ", min));
  out = it->get<int64_t>();
  return absl::OkStatus();
}

// Milliseconds as any JSON number (the controller writes the spec's doubles, e.g. 2.5 or 30000.0).
absl::Status GetMillis(const json& o, const std::string& at, const char* key, double min,
                       absl::Duration& out) {
  double ms = -1;
  SLUICE_RETURN_IF_ERROR(GetNumber(o, at, key, min, ms));
  if (ms >= 0)
    out = absl::Milliseconds(ms);
  return absl::OkStatus();
}

absl::StatusOr<RouteInstance> ParseInstance(const json& o, const std::string& at) {
  if (!o.is_object())
    return Bad(at, "must be an object");
  RouteInstance inst;
  if (!o.contains("id"))
    return Bad(at + ".id", "missing");
  SLUICE_RETURN_IF_ERROR(GetInt(o, at, "id", 0, inst.id));
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "url", true, inst.url));
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "state", true, inst.state));
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "role", false, inst.role));
  if (!inst.role.empty() && inst.role != "prefill" && inst.role != "decode")
    return Bad(at + ".role", "must be prefill or decode (or absent)");
  SLUICE_RETURN_IF_ERROR(GetNumber(o, at, "capacity_rps", 0, inst.capacity_rps));
  SLUICE_RETURN_IF_ERROR(GetNumber(o, at, "request", 0, inst.request));
  SLUICE_RETURN_IF_ERROR(GetNumber(o, at, "limit", 0, inst.limit));
  SLUICE_RETURN_IF_ERROR(GetNumber(o, at, "sm_share", 0, inst.sm_share));
  return inst;
}

// `pipeline`, `stage`, `stages`: all three or none; 0 <= stage < stages <= 64.
absl::Status ParseStageOf(const json& o, const std::string& at, Route& r) {
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "pipeline", false, r.pipeline));
  if (r.pipeline.empty())
    return absl::OkStatus();
  int64_t stage = -1, stages = -1;
  SLUICE_RETURN_IF_ERROR(GetInt(o, at, "stage", 0, stage));
  SLUICE_RETURN_IF_ERROR(GetInt(o, at, "stages", 1, stages));
  if (stages < 1 || stages > 64)
    return Bad(at + ".stages", "must be an integer in [1, 64] when pipeline is set");
  if (stage < 0 || stage >= stages)
    return Bad(at + ".stage", "must be an integer in [0, stages) when pipeline is set");
  r.stage = static_cast<int>(stage);
  r.stages = static_cast<int>(stages);
  return absl::OkStatus();
}

absl::StatusOr<Route> ParseRoute(const json& o, const std::string& at) {
  if (!o.is_object())
    return Bad(at, "must be an object");
  Route r;
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "name", true, r.name));
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "kind", false, r.kind));
  SLUICE_RETURN_IF_ERROR(GetString(o, at, "state", true, r.state));
  int64_t max_batch = 1;
  SLUICE_RETURN_IF_ERROR(GetNumber(o, at, "slo_ms", 0, r.slo_ms));
  SLUICE_RETURN_IF_ERROR(GetInt(o, at, "max_batch", 1, max_batch));
  SLUICE_RETURN_IF_ERROR(GetMillis(o, at, "max_queue_delay_ms", 0, r.max_queue_delay));
  SLUICE_RETURN_IF_ERROR(GetInt(o, at, "queue_max", 1, r.queue_max));
  SLUICE_RETURN_IF_ERROR(GetMillis(o, at, "timeout_ms", 1e-3, r.timeout));
  SLUICE_RETURN_IF_ERROR(GetInt(o, at, "desired", 0, r.desired));
  r.max_batch = static_cast<int>(std::min<int64_t>(max_batch, 1 << 20));
  SLUICE_RETURN_IF_ERROR(ParseStageOf(o, at, r));
  auto insts = o.find("instances");
  if (insts == o.end())
    return r;
  if (!insts->is_array())
    return Bad(at + ".instances", "must be an array");
  for (size_t i = 0; i < insts->size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(RouteInstance inst,
                            ParseInstance((*insts)[i], absl::StrCat(at, ".instances[", i, "]")));
    r.instances.push_back(std::move(inst));
  }
  return r;
}

}  // namespace

absl::StatusOr<RouteTable> ParseRouteTable(const std::string& body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return Bad("body", "not a JSON object");
  RouteTable table;
  SLUICE_RETURN_IF_ERROR(GetInt(doc, "", "version", 0, table.version));
  auto fns = doc.find("functions");
  if (fns == doc.end() || !fns->is_array())
    return Bad("functions", "missing or not an array");
  for (size_t i = 0; i < fns->size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(Route r, ParseRoute((*fns)[i], absl::StrCat("functions[", i, "]")));
    table.functions.push_back(std::move(r));
  }
  return table;
}

}  // namespace sluice::runtime
