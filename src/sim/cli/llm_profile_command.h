// `sluice sim llm-profile --model M [--gpu G] [--tp N] [--json]`: prints the token-level LLM
// model (core/perf/llm_perf_model.h) of one built-in model: prefill time vs prompt tokens, decode
// step vs batch and context, KV bytes per token and KV capacity. Registered under `sim` by
// RegisterSim. Exit codes: 0 ok, 2 bad input (unknown model or GPU, a tp that does not fit).
// Not thread-safe (one call at a time per output stream).
#ifndef SLUICE_SIM_CLI_LLM_PROFILE_COMMAND_H_
#define SLUICE_SIM_CLI_LLM_PROFILE_COMMAND_H_

#include <ostream>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace sluice::sim {

struct SimLlmProfileOptions {
  std::string model;           // llama2-7b | llama2-70b | llama3-8b
  std::string gpu = "a100";    // a100 | a800 | h100
  int tp = 0;                  // 0 = the model's default
  bool json = false;
};

// JSON: {"model", "gpu", "tp", "layers", "param_gib", "kv_bytes_per_token",
// "kv_capacity_tokens", "max_context_tokens", "prefill": [{"tokens", "ms", "ms_per_token"}...],
// "decode": [{"batch", "context_tokens", "ms", "tokens_per_s"}...]} (context_tokens per sequence).
int RunLlmProfileCommand(const SimLlmProfileOptions& options, std::ostream& out,
                         std::ostream& err);

// Adds `llm-profile` to the `sim` command group; the handler stores its exit code in `exit_code`.
void RegisterSimLlmProfile(CLI::App& sim, int& exit_code);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_LLM_PROFILE_COMMAND_H_
