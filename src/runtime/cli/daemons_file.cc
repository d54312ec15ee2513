// daemons.json reading/writing and liveness checks through /proc (Linux only, like the agent).
#include "runtime/cli/daemons_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {
namespace {

using nlohmann::json;

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The process state letter from /proc/<pid>/stat ('Z' zombie), or 0 when there is none.
char ProcState(pid_t pid) {
  const std::string stat = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size())
    return 0;
  return stat[paren + 2];
}

std::string Argv1(pid_t pid) {
  const std::string cmdline = ReadSmallFile(absl::StrCat("/proc/", pid, "/cmdline"));
  const size_t first = cmdline.find('\0');
  if (first == std::string::npos)
    return "";
  const size_t second = cmdline.find('\0', first + 1);
  return cmdline.substr(first + 1,
                        second == std::string::npos ? std::string::npos : second - first - 1);
}

}  // namespace

std::string ResolveHome(const std::string& flag) {
  if (!flag.empty())
    return flag;
  if (const char* h = std::getenv("SLUICE_HOME"); h != nullptr && *h != '\0')
    return h;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return absl::StrCat(h, "/.sluice");
  }
  return ".sluice";
}

std::string DaemonsFilePath(const std::string& home) {
  return absl::StrCat(home, "/run/daemons.json");
}

std::string DaemonsFileToJson(const DaemonsFile& file) {
  json daemons = json::object();
  for (const auto& [name, d] : file.daemons) {
    daemons[name] = {{"pid", d.pid},         {"port", d.port},       {"log", d.log},
                     {"args", d.args},       {"health", d.health},   {"restarts", d.restarts},
                     {"crash_loop", d.crash_loop}};
  }
  return json({{"supervisor_pid", file.supervisor_pid}, {"daemons", daemons}}).dump(2) + "\n";
}

absl::StatusOr<DaemonsFile> ParseDaemonsFile(const std::string& text, const std::string& path) {
  DaemonsFile file;
  try {
    const json doc = json::parse(text);
    file.supervisor_pid = doc.value("supervisor_pid", 0);
    for (const auto& [name, d] : doc.at("daemons").items()) {
      DaemonEntry& e = file.daemons[name];
      e.pid = d.at("pid").get<pid_t>();
      e.port = d.at("port").get<int>();
      e.log = d.at("log").get<std::string>();
      e.args = d.value("args", std::vector<std::string>());
      e.health = d.value("health", std::string());
      e.restarts = d.value("restarts", 0);
      e.crash_loop = d.value("crash_loop", false);
    }
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a daemons file written by `sluice up`: ", e.what()));
  }
  return file;
}

absl::StatusOr<std::optional<DaemonsFile>> ReadDaemonsFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return std::optional<DaemonsFile>();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot read"));
  std::stringstream s;
  s << in.rdbuf();
  absl::StatusOr<DaemonsFile> file = ParseDaemonsFile(s.str(), path);
  if (!file.ok())
    return file.status();
  return std::optional<DaemonsFile>(std::move(*file));
}

absl::Status WriteDaemonsFile(const std::string& path, const DaemonsFile& file) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec)
    return absl::InternalError(absl::StrCat(path, ": cannot create directory: ", ec.message()));
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << DaemonsFileToJson(file);
    if (!out)
      return absl::InternalError(absl::StrCat(tmp, ": cannot write"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat(path, ": rename failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

bool DaemonAlive(pid_t pid, const std::string& daemon) {
  if (pid <= 0)
    return false;
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid)
    return false;  // our child, now reaped
  const char state = ProcState(pid);
  if (state == 0 || state == 'Z' || state == 'X')
    return false;
  return daemon.empty() || Argv1(pid) == daemon;
}

bool AnyAlive(const DaemonsFile& file) {
  if (DaemonAlive(file.supervisor_pid, "up"))
    return true;
  for (const auto& [name, d] : file.daemons) {
    if (DaemonAlive(d.pid, name))
      return true;
  }
  return false;
}

std::string ClientAddress(const std::string& flag, const std::optional<DaemonsFile>& file,
                          const std::string& daemon, int default_port) {
  if (!flag.empty())
    return flag;
  if (file.has_value()) {
    auto it = file->daemons.find(daemon);
    if (it != file->daemons.end())
      return absl::StrCat("127.0.0.1:", it->second.port);
  }
  return absl::StrCat("127.0.0.1:", default_port);
}

}  // namespace sluice::runtime
