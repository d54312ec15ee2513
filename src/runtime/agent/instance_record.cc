// instances.json is written often (every start, restart and exit) and read once at start-up;
// nlohmann's exceptions are confined to the parse here (the project does not throw).
#include "runtime/agent/instance_record.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using nlohmann::json;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json LaunchJson(const InstanceLaunch& l) {
  json env = json::array();
  for (const auto& [k, v] : l.process.env)
    env.push_back({k, v});
  return {{"function", l.function},
          {"gpu_uuid", l.gpu_uuid},
          {"gpus", l.gpus},
          {"llm", l.llm},
          {"port", l.port},
          {"restart_on_failure", l.restart_on_failure},
          {"argv", l.process.argv},
          {"env", env},
          {"unset_env", l.process.unset_env},
          {"log", l.process.log_path},
          {"quota",
           {{"request", l.quota.request},
            {"limit", l.quota.limit},
            {"slo_sensitive", l.quota.slo_sensitive},
            {"mem_limit_bytes", l.quota.mem_limit_bytes},
            {"time_quota", l.quota.time_quota}}}};
}

InstanceLaunch LaunchOf(const json& j) {  // throws json::exception on a bad document
  InstanceLaunch l;
  l.function = j.at("function").get<std::string>();
  l.gpu_uuid = j.at("gpu_uuid").get<std::string>();
  l.gpus = j.value("gpus", std::vector<std::string>());
  l.llm = j.value("llm", false);
  l.port = j.at("port").get<int>();
  l.restart_on_failure = j.at("restart_on_failure").get<bool>();
  l.process.argv = j.at("argv").get<std::vector<std::string>>();
  for (const json& kv : j.at("env"))
    l.process.env.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  l.process.unset_env = j.at("unset_env").get<std::vector<std::string>>();
  l.process.log_path = j.at("log").get<std::string>();
  const json& q = j.at("quota");
  l.quota = {q.at("request").get<double>(), q.at("limit").get<double>(),
             q.at("slo_sensitive").get<bool>(), q.at("mem_limit_bytes").get<int64_t>(),
             q.at("time_quota").get<double>()};
  return l;
}

}  // namespace

std::optional<uint64_t> ProcessStartTicks(pid_t pid) {
  if (pid <= 0)
    return std::nullopt;
  const std::string stat = ReadText(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos)
    return std::nullopt;
  // After "pid (comm) ": field 3 is the state; the start time is field 22.
  const std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(stat).substr(paren + 2), ' ');
  uint64_t ticks = 0;
  if (f.size() < 20 || f[0] == "Z" || f[0] == "X" || !absl::SimpleAtoi(f[19], &ticks))
    return std::nullopt;
  return ticks;
}

bool RecordAlive(const InstanceRecord& r) {
  const std::optional<uint64_t> ticks = ProcessStartTicks(r.pid);
  return ticks.has_value() && *ticks == r.start_ticks;
}

std::string InstanceRecordsToJson(const std::vector<InstanceRecord>& records) {
  json all = json::array();
  for (const InstanceRecord& r : records) {
    all.push_back({{"id", r.id},
                   {"pid", r.pid},
                   {"start_ticks", r.start_ticks},
                   {"restarts", r.restarts},
                   {"launch", LaunchJson(r.launch)}});
  }
  return json{{"instances", all}}.dump(1) + "\n";
}

absl::StatusOr<std::vector<InstanceRecord>> ParseInstanceRecords(const std::string& text,
                                                                 const std::string& path) {
  std::vector<InstanceRecord> out;
  size_t i = 0;
  try {
    const json doc = json::parse(text);
    for (const json& r : doc.at("instances")) {
      out.push_back({r.at("id").get<int64_t>(), r.at("pid").get<pid_t>(),
                     r.at("start_ticks").get<uint64_t>(), r.value("restarts", 0),
                     LaunchOf(r.at("launch"))});
      ++i;
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": instances[", i, "]: not an instance record: ", e.what()));
  }
  return out;
}

absl::StatusOr<std::vector<InstanceRecord>> ReadInstanceRecords(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0)
    return std::vector<InstanceRecord>();
  return ParseInstanceRecords(ReadText(path), path);
}

absl::Status WriteInstanceRecords(const std::string& path,
                                  const std::vector<InstanceRecord>& records) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << InstanceRecordsToJson(records);
    if (!out)
      return absl::InternalError(absl::StrCat(tmp, ": cannot write"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return absl::InternalError(absl::StrCat(path, ": rename failed: ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace sluice::runtime
