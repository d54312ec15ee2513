// The `sim profile` handler: ProfileFunction (src/sim/experiment) with the loader's defaults,
// formatted as text or JSON. CLI11 (which throws) is confined to RegisterSimProfile.
#include "sim/cli/profile_command.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "CLI/CLI.hpp"
#include "common/status.h"
#include "core/perf/perf_model.h"
#include "nlohmann/json.hpp"
#include "sim/cli/sim_command.h"
#include "sim/experiment/function_profile.h"

namespace sluice::sim {
namespace {

using core::FunctionKind;
using Json = nlohmann::ordered_json;

absl::StatusOr<FunctionKind> KindOf(const std::string& kind, const core::ModelInfo& model) {
  const bool llm_model = model.kind == FunctionKind::kLlmInference;
  if (kind.empty())
    return model.kind;
  if (kind == "training")
    return FunctionKind::kTraining;
  if (kind != "inference" && kind != "llm") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kind: unknown kind '", kind, "' (allowed: inference, training, llm)"));
  }
  if ((kind == "llm") != llm_model) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kind: model '", model.name, "' is ",
                     llm_model ? "an LLM; use --kind llm" : "not an LLM; use --kind inference"));
  }
  return model.kind;
}

const char* KindName(FunctionKind kind) {
  switch (kind) {
    case FunctionKind::kTraining:
      return "training";
    case FunctionKind::kLlmInference:
      return "llm";
    default:
      return "inference";
  }
}

double Ms(absl::Duration d) {
  return absl::ToDoubleMilliseconds(d);
}

Json ProfileJson(const SimProfileOptions& o, FunctionKind kind, const FunctionProfile& p) {
  Json j;
  j["model"] = o.model;
  j["kind"] = KindName(kind);
  j["method"] = kind == FunctionKind::kTraining ? "binary-search" : o.method;
  j["slo_ms"] = o.slo_ms;
  j["profiled_slo_ms"] = Ms(p.profiled_slo);
  j["request"] = p.quota.request;
  j["limit"] = p.quota.limit;
  j["batch"] = p.batch;
  j["trials"] = p.trials;
  j["capacity_rps"] = p.capacity_rps;
  Json log = Json::array();
  for (const TrialRecord& t : p.log) {
    log.push_back(Json{{"sm_share", t.sm_share},
                       {"batch", t.batch},
                       {"latency_ms", Ms(t.latency)},
                       {"throughput", t.throughput}});
  }
  j["log"] = std::move(log);
  return j;
}

std::string ProfileText(const SimProfileOptions& o, FunctionKind kind, const FunctionProfile& p,
                        const core::ProfilerConfig& c) {
  const bool training = kind == FunctionKind::kTraining;
  std::string out = absl::StrFormat("model %s (%s), ", o.model, KindName(kind));
  if (training) {
    absl::StrAppendFormat(&out, "binary search at %g %% / %g %% of exclusive throughput\n",
                          100 * c.request_fraction, 100 * c.limit_fraction);
  } else {
    absl::StrAppendFormat(&out, "method %s, SLO %g ms%s\n", o.method, Ms(p.profiled_slo),
                          kind == FunctionKind::kLlmInference ? " per output token" : "");
  }
  absl::StrAppendFormat(&out, "request %.2f  limit %.2f  batch %d  trials %d", p.quota.request,
                        p.quota.limit, p.batch, p.trials);
  if (!training)
    absl::StrAppendFormat(&out, "  capacity %.2f req/s", p.capacity_rps);
  absl::StrAppendFormat(&out, "\n%5s %8s %6s %11s %12s\n", "trial", "sm_share", "batch",
                        "latency_ms", training ? "samples/s" : "throughput");
  for (size_t i = 0; i < p.log.size(); ++i) {
    const TrialRecord& t = p.log[i];
    absl::StrAppendFormat(&out, "%5d %8.2f %6d %11.3f %12.2f\n", i + 1, t.sm_share, t.batch,
                          Ms(t.latency), t.throughput);
  }
  return out;
}

absl::Status Run(const SimProfileOptions& o, std::ostream& out) {
  const std::unique_ptr<core::PerfModel> perf = core::PerfModel::BuiltIn();
  SLUICE_ASSIGN_OR_RETURN(const core::ModelEntry* model, perf->Find(o.model));
  ProfileTarget t;
  SLUICE_ASSIGN_OR_RETURN(t.kind, KindOf(o.kind, model->info));
  if (!(o.slo_ms > 0))
    return absl::InvalidArgumentError("--slo-ms must be > 0");
  if (o.method != "hgs" && o.method != "traversal") {
    return absl::InvalidArgumentError("--method must be hgs or traversal");
  }
  t.slo = absl::Milliseconds(o.slo_ms);
  t.method = o.method == "traversal" ? ProfileMethod::kTraversal : ProfileMethod::kHybridGrowth;
  t.fixed_batch = o.batch;
  t.prompt_tokens = o.prompt_tokens;
  t.output_tokens = o.output_tokens;
  SLUICE_ASSIGN_OR_RETURN(const core::Profiler profiler, core::Profiler::Create({}));
  absl::StatusOr<FunctionProfile> p = ProfileFunction(profiler, *model, t);
  // An SLO no share can meet is a problem with the input, like an impossible slo_ms in a file.
  if (absl::IsFailedPrecondition(p.status()))
    return absl::InvalidArgumentError(p.status().message());
  SLUICE_RETURN_IF_ERROR(p.status());
  out << (o.json ? ProfileJson(o, t.kind, *p).dump(2) + "\n"
                 : ProfileText(o, t.kind, *p, profiler.config()));
  out.flush();
  return absl::OkStatus();
}

}  // namespace

int RunProfileCommand(const SimProfileOptions& options, std::ostream& out, std::ostream& err) {
  const absl::Status status = Run(options, out);
  if (status.ok())
    return 0;
  err << "sluice sim profile: " << status.message() << "\n";
  err.flush();
  return ExitCodeFor(status);
}

void RegisterSimProfile(CLI::App& sim, int& exit_code) {
  CLI::App* cmd = sim.add_subcommand(
      "profile", "Dilu's profiler on the performance model: <request, limit, batch> of a model");
  auto o = std::make_shared<SimProfileOptions>();  // shared with the callback, which CLI11 copies
  auto batch = std::make_shared<int>(1);
  cmd->add_option("--model", o->model, "model of the performance model")->required();
  cmd->add_option("--kind", o->kind, "inference | training | llm (default: the model's kind)")
      ->check(CLI::IsMember({"inference", "training", "llm"}));
  cmd->add_option("--slo-ms", o->slo_ms, "per-request SLO in ms (default 100)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--method", o->method, "hgs (default) | traversal")
      ->check(CLI::IsMember({"hgs", "traversal"}));
  CLI::Option* batch_opt =
      cmd->add_option("--batch", *batch, "pin the batch size")->check(CLI::Range(1, 4096));
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "LLM prompt tokens (default 256)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--output-tokens", o->output_tokens, "LLM output tokens (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--json", o->json, "print JSON instead of text");
  cmd->callback([o, batch, batch_opt, &exit_code] {
    SimProfileOptions options = *o;
    if (batch_opt->count() > 0)
      options.batch = *batch;
    exit_code = RunProfileCommand(options, std::cout, std::cerr);
  });
}

}  // namespace sluice::sim
