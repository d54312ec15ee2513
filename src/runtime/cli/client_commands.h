// The client verbs of `sluice` (deploy, delete, scale, invoke, status, load): they talk to the
// controller's admin API and the gateway (docs/platform.md) and print what they got. Each Run*
// returns the process exit code: 0 ok, 2 bad local input (spec, trace, flags), 1 anything else
// (daemon unreachable, error answer). Registered by runtime_commands.cc. Thread-compatible.
#ifndef SLUICE_RUNTIME_CLI_CLIENT_COMMANDS_H_
#define SLUICE_RUNTIME_CLI_CLIENT_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::runtime {

// Where the daemons are: explicit --controller/--gateway, else <home>/run/daemons.json, else
// the default ports.
struct ClientFlags {
  std::string home;  // unresolved --home ("" = $SLUICE_HOME or ~/.sluice)
  std::string controller;
  std::string gateway;
};

// Validates FILE with LoadFunctionSpec before sending it; `wait`: polls until ready or failed.
int RunDeploy(const ClientFlags& c, const std::string& file, bool wait, double timeout_s);
int RunDelete(const ClientFlags& c, const std::string& name);
int RunScale(const ClientFlags& c, const std::string& name, std::optional<int> min,
             std::optional<int> max);
// POST /admin/v1/functions/NAME/mutate {"instance", "role"}; prints the switch.
int RunMutate(const ClientFlags& c, const std::string& name, int64_t instance,
              const std::string& role);
// POSTs `data` to the gateway's /v2/models/NAME/infer and prints the answer's body.
int RunInvoke(const ClientFlags& c, const std::string& name, const std::string& data);
// A table of functions and instances, or the controller's JSON as is.
int RunStatus(const ClientFlags& c, bool json);

struct LoadFlags {
  std::string function;
  std::string trace;
  double seconds = 0;  // 0: the trace's length
  std::string data;
  uint64_t seed = 1;
  double grace_s = 10;
  bool json = false;
  std::string out_dir;  // when set: summary.json + timeline CSV for `sluice sim plot` (load_out.h)
};
int RunLoadCommand(const ClientFlags& c, const LoadFlags& f);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_CLIENT_COMMANDS_H_
