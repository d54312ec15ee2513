// JSON of the agent API. nlohmann's exceptions are caught at this boundary and become
// InvalidArgument naming the field that was missing or of the wrong type.
#include "runtime/controller/agent_api.h"

#include <exception>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

// j[key] as T, or `fallback` when absent or null; throws json errors on a wrong type.
template <typename T>
T Opt(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return fallback;
  return it->get<T>();
}

ReportedGpu ParseGpu(const json& j) {
  ReportedGpu g;
  g.uuid = j.at("uuid").get<std::string>();
  g.name = Opt<std::string>(j, "name", "");
  g.index = Opt<int>(j, "index", 0);
  g.sm_count = Opt<int>(j, "sm_count", 0);
  g.memory_bytes = j.at("memory_bytes").get<int64_t>();
  g.tokens_per_period = Opt<int64_t>(j, "tokens_per_period", 0);
  g.period = absl::Microseconds(Opt<int64_t>(j, "period_us", 0));
  g.raw = j;
  return g;
}

ReportedInstance ParseInstance(const json& j) {
  ReportedInstance i;
  i.id = j.at("id").get<int64_t>();
  i.function = j.at("function").get<std::string>();
  i.gpu = Opt<std::string>(j, "gpu", "");
  if (j.contains("gpus") && j["gpus"].is_array())
    i.gpus = j["gpus"].get<std::vector<std::string>>();
  i.port = Opt<int>(j, "port", 0);
  i.state = j.at("state").get<std::string>();
  i.restarts = Opt<int>(j, "restarts", 0);
  i.request = Opt<double>(j, "request", 0.0);
  i.limit = Opt<double>(j, "limit", 0.0);
  i.time_quota = Opt<double>(j, "time_quota", 0.0);
  i.max_batch = Opt<int>(j, "max_batch", 0);
  i.sm_share = Opt<double>(j, "sm_share", 0.0);
  i.mem_used_bytes = Opt<int64_t>(j, "mem_used_bytes", 0);
  i.in_flight = Opt<int>(j, "in_flight", 0);
  if (auto p = j.find("parked"); p != j.end() && p->is_boolean())
    i.parked = p->get<bool>();
  return i;
}

}  // namespace

absl::StatusOr<NodeReport> ParseNodeReport(const std::string& body) {
  NodeReport n;
  try {
    const json j = json::parse(body);
    n.node = j.at("node").get<std::string>();
    n.device = Opt<std::string>(j, "device", "");
    for (const json& g : j.at("gpus"))
      n.gpus.push_back(ParseGpu(g));
    for (const json& i : j.at("instances"))
      n.instances.push_back(ParseInstance(i));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("agent node status: ", e.what()));
  }
  return n;
}

http::Request AgentRequest(const std::string& method, const std::string& target, std::string body) {
  http::Request r;
  r.method = method;
  r.target = target;
  if (!body.empty())
    r.headers = {{"content-type", "application/json"}};
  r.body = std::move(body);
  return r;
}

bool IsTerminalAgentState(const std::string& state) {
  return state == "stopped" || state == "failed" || state == "completed";
}

bool IsSloSensitive(FunctionKind kind) {
  return kind != FunctionKind::kTraining;
}

int64_t MemoryLimitBytes(const FunctionSpec& spec) {
  return static_cast<int64_t>(spec.memory_gib * 1073741824.0);
}

std::string StartInstanceBody(const FunctionSpec& spec, const StartInstanceArgs& args) {
  json env = json::object();
  for (const auto& [k, v] : spec.env)
    env[k] = v;
  json j{{"id", args.id},
         {"function", spec.name},
         {"kind", FunctionKindName(spec.kind)},
         {"command", spec.command},
         {"env", env},
         {"gpu", args.gpu_uuid},
         {"request", args.request},
         {"limit", args.limit},
         {"slo_sensitive", IsSloSensitive(spec.kind)},
         {"mem_limit_bytes", MemoryLimitBytes(spec)},
         {"restart", args.restart ? "on-failure" : "never"},
         {"model_path", spec.model.path},
         {"max_batch", args.max_batch}};
  if (!args.gpu_uuids.empty())
    j["gpus"] = args.gpu_uuids;
  if (args.time_quota != 1.0)  // absent = 1: a Dilu instance's body is what it always was
    j["time_quota"] = args.time_quota;
  return j.dump();
}

std::string QuotaBody(double request, double limit, bool slo_sensitive, int64_t mem_limit_bytes,
                      std::optional<double> time_quota) {
  json j{{"request", request},
         {"limit", limit},
         {"slo_sensitive", slo_sensitive},
         {"mem_limit_bytes", mem_limit_bytes}};
  if (time_quota)
    j["time_quota"] = *time_quota;
  return j.dump();
}

absl::StatusOr<core::TrialResult> ParseTrialResult(const std::string& body) {
  double latency_ms = 0;
  double throughput = 0;
  int64_t memory = 0;
  try {
    const json j = json::parse(body);
    latency_ms = j.at("latency_ms").get<double>();
    throughput = j.at("throughput").get<double>();
    memory = Opt<int64_t>(j, "memory_bytes", 0);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("trial answer: ", e.what()));
  }
  if (!(latency_ms > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial answer: field 'latency_ms': must be > 0, got ", latency_ms));
  }
  if (!(throughput >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial answer: field 'throughput': must be >= 0, got ", throughput));
  }
  core::TrialResult r;
  r.latency = absl::Microseconds(latency_ms * 1000.0);
  r.throughput = throughput;
  r.memory = common::Bytes(memory);
  return r;
}

}  // namespace sluice::runtime
