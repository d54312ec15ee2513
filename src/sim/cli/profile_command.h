// `sluice sim profile --model NAME [--kind inference|training|llm] [--slo-ms N]
// [--method hgs|traversal] [--batch N] [--prompt-tokens N] [--output-tokens N] [--json]`: runs
// Dilu's multi-factor profiler against the performance model for one model, exactly as the
// experiment loader does for a function without `quota:`, and prints the chosen <request, limit,
// batch>, the trial count and the trial log. Registered under `sim` by RegisterSim. Exit codes:
// 0 ok, 2 bad input (unknown model, kind mismatch, an SLO no share can meet), 1 other failures.
// Not thread-safe (one call at a time per output stream).
#ifndef SLUICE_SIM_CLI_PROFILE_COMMAND_H_
#define SLUICE_SIM_CLI_PROFILE_COMMAND_H_

#include <optional>
#include <ostream>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace sluice::sim {

struct SimProfileOptions {
  std::string model;           // a perf-model name (core::PerfModel::Find rules)
  std::string kind;            // inference | training | llm; empty = the model's kind
  double slo_ms = 100;         // per request, as `slo_ms` in an experiment (LLM included)
  std::string method = "hgs";  // hgs | traversal (inference and LLM only)
  std::optional<int> batch;    // pin the batch, as an explicit `batching.max_batch` does
  int prompt_tokens = 256;     // LLM, as `tokens.prompt`
  int output_tokens = 128;     // LLM, as `tokens.output`: per-token SLO = slo_ms / this
  bool json = false;           // print JSON instead of text
};

// Runs the command: the report goes to `out`, an error to `err` as one line. Returns the exit
// code. JSON: {"model", "kind", "method", "slo_ms", "profiled_slo_ms", "request", "limit",
// "batch", "trials", "capacity_rps", "log": [{"sm_share", "batch", "latency_ms",
// "throughput"}...]} (throughput: requests/s; LLM tokens/s; training samples/s).
int RunProfileCommand(const SimProfileOptions& options, std::ostream& out, std::ostream& err);

// Adds `profile` to the `sim` command group; the handler stores its exit code in `exit_code`.
void RegisterSimProfile(CLI::App& sim, int& exit_code);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_PROFILE_COMMAND_H_
