// The `sim llm-profile` handler: tables of BuiltinLlmModel as text or JSON. CLI11 (which throws)
// is confined to RegisterSimLlmProfile.
#include "sim/cli/llm_profile_command.h"

#include <iostream>
#include <memory>

#include "absl/strings/str_format.h"

#include "CLI/CLI.hpp"
#include "core/perf/llm_perf_model.h"
#include "nlohmann/json.hpp"
#include "sim/cli/sim_command.h"

namespace sluice::sim {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kPrefillTokens[] = {1, 128, 512, 1024, 2048, 4096, 8192};
constexpr int kDecodeBatches[] = {1, 8, 32, 64, 128, 256};
constexpr int kDecodeContexts[] = {512, 2048};

Json Profile(const core::LlmPerfModel& m) {
  const core::LlmModelSpec& s = m.spec();
  Json j = {{"model", s.name},
            {"gpu", s.gpu},
            {"tp", s.tp},
            {"layers", s.num_layers},
            {"param_gib", s.param_bytes.gib()},
            {"kv_bytes_per_token", s.kv_bytes_per_token.count()},
            {"kv_capacity_tokens", s.KvCapacityTokens()},
            {"max_context_tokens", s.max_context_tokens}};
  j["prefill"] = Json::array();
  for (int tokens : kPrefillTokens) {
    if (tokens > s.max_context_tokens)
      continue;
    double ms = absl::ToDoubleMilliseconds(m.PrefillTime(tokens, 1));
    j["prefill"].push_back({{"tokens", tokens}, {"ms", ms}, {"ms_per_token", ms / tokens}});
  }
  j["decode"] = Json::array();
  for (int ctx : kDecodeContexts) {
    for (int batch : kDecodeBatches) {
      if (int64_t{batch} * ctx > s.KvCapacityTokens())
        continue;  // would not fit the KV cache
      double ms = absl::ToDoubleMilliseconds(m.DecodeTime(batch, int64_t{batch} * ctx));
      j["decode"].push_back({{"batch", batch},
                             {"context_tokens", ctx},
                             {"ms", ms},
                             {"tokens_per_s", batch * 1000.0 / ms}});
    }
  }
  return j;
}

void PrintText(const Json& j, std::ostream& out) {
  out << absl::StrFormat(
      "%s on %s x%d: %d layers, %.2f GiB parameters, %d KiB KV per token, KV capacity %d tokens "
      "(max context %d)\n",
      j["model"].get<std::string>(), j["gpu"].get<std::string>(), j["tp"].get<int>(),
      j["layers"].get<int>(), j["param_gib"].get<double>(),
      static_cast<int>(j["kv_bytes_per_token"].get<int64_t>() / 1024),
      j["kv_capacity_tokens"].get<int64_t>(), j["max_context_tokens"].get<int>());
  out << "prefill (one prompt)\n  tokens        ms   ms/token\n";
  for (const Json& p : j["prefill"]) {
    out << absl::StrFormat("  %6d  %8.2f  %9.4f\n", p["tokens"].get<int>(),
                           p["ms"].get<double>(), p["ms_per_token"].get<double>());
  }
  out << "decode step\n  batch  context/seq        ms   tokens/s\n";
  for (const Json& d : j["decode"]) {
    out << absl::StrFormat("  %5d  %11d  %8.2f  %9.1f\n", d["batch"].get<int>(),
                           d["context_tokens"].get<int>(), d["ms"].get<double>(),
                           d["tokens_per_s"].get<double>());
  }
}

}  // namespace

int RunLlmProfileCommand(const SimLlmProfileOptions& options, std::ostream& out,
                         std::ostream& err) {
  auto model = core::BuiltinLlmModel(options.model, options.gpu, options.tp);
  if (!model.ok()) {
    err << "sluice sim llm-profile: " << model.status().message() << "\n";
    err.flush();
    return ExitCodeFor(model.status());
  }
  Json j = Profile(**model);
  if (options.json)
    out << j.dump(2) << "\n";
  else
    PrintText(j, out);
  out.flush();
  return 0;
}

void RegisterSimLlmProfile(CLI::App& sim, int& exit_code) {
  CLI::App* cmd = sim.add_subcommand(
      "llm-profile", "token-level LLM model: prefill and decode times, KV capacity");
  auto o = std::make_shared<SimLlmProfileOptions>();  // shared with the callback (CLI11 copies)
  cmd->add_option("--model", o->model, "llama2-7b | llama2-70b | llama3-8b")->required();
  cmd->add_option("--gpu", o->gpu, "a100 (default) | a800 | h100");
  cmd->add_option("--tp", o->tp, "tensor-parallel degree (default: the model's)")
      ->check(CLI::Range(0, 64));
  cmd->add_flag("--json", o->json, "print JSON instead of text");
  cmd->callback([o, &exit_code] { exit_code = RunLlmProfileCommand(*o, std::cout, std::cerr); });
}

}  // namespace sluice::sim
