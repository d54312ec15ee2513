// The state directory of `sluice up` (docs/platform.md, "Defaults"): where it is, and
// <home>/run/daemons.json, which records the pid, port and log of each daemon so that `sluice
// down` can stop them and client commands (deploy, status, load, ...) can find them.
// Used by src/runtime/cli. Thread-compatible: plain values and file I/O.
#ifndef SLUICE_RUNTIME_CLI_DAEMONS_FILE_H_
#define SLUICE_RUNTIME_CLI_DAEMONS_FILE_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::runtime {

struct DaemonEntry {
  pid_t pid = 0;
  int port = 0;
  std::string log;  // absolute path of its log file
  // How the supervisor (re)starts it: the arguments after the `sluice` binary, with the port it
  // first listened on pinned ("--port P"), so a restart keeps its address; and the path of its
  // health check. Empty in files written before supervision (they cannot be repaired).
  std::vector<std::string> args;
  std::string health;
  int restarts = 0;         // restarts by the supervisor since `sluice up`
  bool crash_loop = false;  // it keeps exiting soon after each restart (RestartBackoff)
  bool operator==(const DaemonEntry&) const = default;
};

struct DaemonsFile {
  // The `sluice up` process that supervises the daemons: the foreground `sluice up`, or with
  // --detach the background `sluice up --supervise` it started. 0 in files of older versions.
  pid_t supervisor_pid = 0;
  std::map<std::string, DaemonEntry> daemons;  // by name: "agent", "controller", "gateway"
  bool operator==(const DaemonsFile&) const = default;
};

// `flag` when non-empty, else $SLUICE_HOME, else $HOME/.sluice (else ./.sluice).
std::string ResolveHome(const std::string& flag);
std::string DaemonsFilePath(const std::string& home);  // <home>/run/daemons.json

std::string DaemonsFileToJson(const DaemonsFile& file);
// InvalidArgument naming `path` when `text` is not a daemons.json document.
absl::StatusOr<DaemonsFile> ParseDaemonsFile(const std::string& text, const std::string& path);

// nullopt when the file does not exist; errors when it exists but cannot be read or parsed.
absl::StatusOr<std::optional<DaemonsFile>> ReadDaemonsFile(const std::string& path);
// Writes atomically (a temporary file renamed over `path`), creating the directory.
[[nodiscard]] absl::Status WriteDaemonsFile(const std::string& path, const DaemonsFile& file);

// True when `pid` names a live process (not a zombie) whose argv[1] is `daemon` (guards against
// a recycled pid); with an empty `daemon`, any live process. Reaps `pid` if it is our exited child.
bool DaemonAlive(pid_t pid, const std::string& daemon);
// True when any daemon listed (or the supervisor) is alive.
bool AnyAlive(const DaemonsFile& file);

// The admin/gateway address clients use: `flag` when non-empty, else 127.0.0.1:<port> from the
// daemons file when it lists `daemon`, else 127.0.0.1:<default_port>.
std::string ClientAddress(const std::string& flag, const std::optional<DaemonsFile>& file,
                          const std::string& daemon, int default_port);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_DAEMONS_FILE_H_
