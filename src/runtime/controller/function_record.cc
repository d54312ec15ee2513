// FunctionRecord <-> JSON for the Store. nlohmann's exceptions are caught here, at the boundary,
// and become DataLoss (a stored record is our own output, so any defect means corruption).
#include "runtime/controller/function_record.h"

#include <exception>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {

using nlohmann::json;

std::string FunctionKey(const std::string& name) {
  return absl::StrCat(kFunctionKeyPrefix, name);
}

json ProfileToJson(const ProfileInfo& p) {
  return json{{"request", p.request},       {"limit", p.limit},
              {"batch", p.batch},           {"capacity_rps", p.capacity_rps},
              {"latency_ms", p.latency_ms}, {"memory_bytes", p.memory_bytes},
              {"trials", p.trials},         {"source", p.source},
              {"time_quota", p.time_quota}};
}

namespace {

ProfileInfo ProfileFromJson(const json& j) {
  ProfileInfo p;
  p.request = j.at("request").get<double>();
  p.limit = j.at("limit").get<double>();
  p.batch = j.at("batch").get<int>();
  p.capacity_rps = j.at("capacity_rps").get<double>();
  p.latency_ms = j.at("latency_ms").get<double>();
  p.memory_bytes = j.at("memory_bytes").get<int64_t>();
  p.trials = j.at("trials").get<int>();
  p.source = j.at("source").get<std::string>();
  // Records written before time quotas and trial points have neither.
  p.time_quota = j.value("time_quota", 1.0);
  if (auto pts = j.find("points"); pts != j.end()) {
    for (const json& t : *pts) {
      p.points.push_back({t.at(0).get<int>(), t.at(1).get<double>(), t.at(2).get<double>()});
    }
  }
  return p;
}

// The stored profile: ProfileToJson plus the trial points as [batch, sm_share, latency_ms].
json StoredProfile(const ProfileInfo& p) {
  json j = ProfileToJson(p);
  json pts = json::array();
  for (const TrialPoint& t : p.points)
    pts.push_back(json::array({t.batch, t.sm_share, t.latency_ms}));
  j["points"] = std::move(pts);
  return j;
}

json OptionalInt(const std::optional<int>& v) {
  return v ? json(*v) : json(nullptr);
}

std::optional<int> IntOrNull(const json& j) {
  if (j.is_null())
    return std::nullopt;
  return j.get<int>();
}

}  // namespace

std::string RecordToJson(const FunctionRecord& r) {
  json j{{"spec_yaml", FunctionSpecToYaml(r.spec)},
         {"state", FunctionStateName(r.state)},
         {"message", r.message},
         {"profile", r.profile ? StoredProfile(*r.profile) : json(nullptr)},
         {"min", OptionalInt(r.min_override)},
         {"max", OptionalInt(r.max_override)},
         {"cold_starts", r.cold_starts},
         {"profiling_instance", r.profiling_instance},
         {"training_launched", r.training_launched}};
  return j.dump();
}

absl::StatusOr<FunctionRecord> RecordFromJson(const std::string& key, const std::string& text) {
  FunctionRecord r;
  std::string spec_yaml;
  std::string state;
  try {
    const json j = json::parse(text);
    spec_yaml = j.at("spec_yaml").get<std::string>();
    state = j.at("state").get<std::string>();
    r.message = j.at("message").get<std::string>();
    if (!j.at("profile").is_null())
      r.profile = ProfileFromJson(j.at("profile"));
    r.min_override = IntOrNull(j.at("min"));
    r.max_override = IntOrNull(j.at("max"));
    r.cold_starts = j.at("cold_starts").get<int64_t>();
    r.profiling_instance = j.at("profiling_instance").get<int64_t>();
    r.training_launched = j.at("training_launched").get<bool>();
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("registry record '", key, "': ", e.what()));
  }
  const std::optional<FunctionState> s = ParseFunctionState(state);
  if (!s)
    return absl::DataLossError(absl::StrCat("registry record '", key, "': state '", state, "'"));
  r.state = *s;
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(spec_yaml, key);
  if (!spec.ok()) {
    return absl::DataLossError(
        absl::StrCat("registry record '", key, "': ", spec.status().message()));
  }
  r.spec = *std::move(spec);
  return r;
}

}  // namespace sluice::runtime
