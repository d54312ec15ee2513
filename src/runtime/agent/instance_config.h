// StartInstance and quota bodies of the agent API (docs/platform.md "Agent API"): strict JSON
// parsing with errors naming the field, placeholder expansion (${PORT} ${GPU} ${MODEL_PATH}
// ${FUNCTION} ${INSTANCE} ${SLUICE_BIN_DIR}) and the environment of an instance process.
// Used by the agent daemon and its tests. Pure functions; thread-compatible.
#ifndef SLUICE_RUNTIME_AGENT_INSTANCE_CONFIG_H_
#define SLUICE_RUNTIME_AGENT_INSTANCE_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::runtime {

// One `POST /agent/v1/instances` body. Defaults apply to absent optional fields.
struct StartInstance {
  int64_t id = -1;              // required, >= 0; unique on the node
  std::string function;         // required, non-empty
  std::string kind = "inference";  // inference | training | llm
  std::vector<std::string> command;  // required, non-empty; placeholders expanded
  std::map<std::string, std::string> env;  // values expanded
  std::string gpu;              // a GPU uuid of this node; "" = the least-loaded GPU
  // All the instance's GPUs in order (multi-GPU instances); empty = just `gpu`. Distinct,
  // non-empty; gpus[0] == gpu when both are given. The daemon checks they exist.
  std::vector<std::string> gpus;
  double request = 1.0;         // SM share in (0, 1], <= limit
  double limit = 1.0;
  // HAS-GPU's time quota q in (0, 1]: the share of each token-server time window the instance
  // may run kernels for (at its SM share within that time). 1 = no time slicing.
  double time_quota = 1.0;
  bool slo_sensitive = true;
  int64_t mem_limit_bytes = 0;  // 0 = no limit
  std::string restart = "on-failure";  // on-failure | never
  std::string model_path;
  int max_batch = 1;            // SLUICE_MAX_BATCH, >= 1
  // A model in the node's parameter store (docs/parameter-store.md); the instance gets
  // SLUICE_PARAMS_SOCKET and SLUICE_PARAMS_MODEL to map it. "" = none.
  std::string params;
};

// `PUT /agent/v1/instances/{id}/quota`: absent fields keep their current values.
struct QuotaUpdate {
  double request = 1.0;
  double limit = 1.0;
  bool slo_sensitive = true;
  int64_t mem_limit_bytes = 0;
  double time_quota = 1.0;  // (0, 1]; last, so older aggregate initialisers still compile
};

// InvalidArgument "field '<name>': <why>" for malformed JSON, missing required fields, wrong
// types, out-of-range values and unknown fields.
absl::StatusOr<StartInstance> ParseStartInstance(const std::string& body);
// `current` supplies the values of absent fields; same errors as above.
absl::StatusOr<QuotaUpdate> ParseQuotaUpdate(const std::string& body, const QuotaUpdate& current);

using PlaceholderVars = std::map<std::string, std::string>;  // "PORT" -> "7101"
// Replaces every ${NAME} in `text` with vars[NAME]. InvalidArgument naming `field` and the
// placeholder for an unknown name or an unterminated "${".
absl::StatusOr<std::string> ExpandPlaceholders(const std::string& text,
                                               const PlaceholderVars& vars,
                                               const std::string& field);

// Where the instance runs and what the agent provides it.
struct InstanceContext {
  int port = 0;
  std::string gpu_uuid;
  int gpu_index = 0;
  bool emulated = false;
  std::string token_socket;
  std::string intercept_lib;  // libsluice_cuda.so
  std::string emulated_dir;   // holds the emulated libcuda.so.1 (emulated only)
  std::string emu_uuid;       // SLUICE_EMU_UUID of the emulated device (emulated only)
  std::string bin_dir;        // ${SLUICE_BIN_DIR}
  // Every GPU of the instance in order, first = gpu_uuid / gpu_index; empty = just that one.
  std::vector<std::string> gpu_uuids;
  std::vector<int> gpu_indices;
};

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The placeholder values for `s` in `ctx`.
PlaceholderVars PlaceholdersFor(const StartInstance& s, const InstanceContext& ctx);
// The expanded argv, or InvalidArgument naming "command[i]".
absl::StatusOr<std::vector<std::string>> ExpandCommand(const StartInstance& s,
                                                       const PlaceholderVars& vars);
// The variables set over the agent's own environment (docs/platform.md): PORT, SLUICE_*
// (SLUICE_GPU_UUID the first GPU, SLUICE_GPU_UUIDS all of them, comma-separated), LD_PRELOAD,
// CUDA_VISIBLE_DEVICES (real GPUs: every index, in order) or the emulated driver's variables,
// then the request's env (expanded; it may override ours). InvalidArgument naming "env.NAME".
absl::StatusOr<EnvList> BuildInstanceEnv(const StartInstance& s, const InstanceContext& ctx);
// Variables the agent removes from its own environment before adding EnvList (so a stale
// setting of the agent's never leaks into an instance).
std::vector<std::string> InstanceUnsetEnv();

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_INSTANCE_CONFIG_H_
