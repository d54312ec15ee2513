// FunctionSpecToYaml: writes a spec back as block YAML (the registry persists this text).
// Doubles go out in shortest round-trip form so parse(ToYaml(spec)) == spec exactly.
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include "runtime/spec/function_spec.h"
#include "yaml-cpp/yaml.h"

namespace sluice::runtime {
namespace {

std::string FormatDouble(double value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}

void EmitLaunchOf(YAML::Emitter& out, const std::vector<std::string>& command,
                  const std::string& image) {
  if (!image.empty()) {
    out << YAML::Key << "image" << YAML::Value << image;
    return;
  }
  if (command.empty())
    return;  // a pipeline whose stages all name their own
  out << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& arg : command)
    out << YAML::DoubleQuoted << arg;
  out << YAML::EndSeq;
}

void EmitLaunch(YAML::Emitter& out, const FunctionSpec& spec) {
  EmitLaunchOf(out, spec.command, spec.image);
}

void EmitPair(YAML::Emitter& out, const char* key, const char* a, const std::string& va,
              const char* b, const std::string& vb) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << a << YAML::Value << va << YAML::Key << b << YAML::Value << vb;
  out << YAML::EndMap;
}

// The default policy without params is not written: a dilu spec reads as it did before
// `policy` existed.
void EmitPolicy(YAML::Emitter& out, const FunctionSpec& spec) {
  if (spec.policy == kDefaultPolicy && spec.policy_params.empty())
    return;
  out << YAML::Key << "policy" << YAML::Value << YAML::DoubleQuoted << spec.policy;
  if (spec.policy_params.empty())
    return;
  out << YAML::Key << "policy_params" << YAML::Value << YAML::BeginMap;
  for (const PolicyParamSpec& p : spec.policy_params)
    out << YAML::Key << YAML::DoubleQuoted << p.key << YAML::Value << YAML::DoubleQuoted << p.value;
  out << YAML::EndMap;
}

void EmitQuota(YAML::Emitter& out, const QuotaSpec& quota) {
  out << YAML::Key << "quota" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "request" << YAML::Value << FormatDouble(quota.request);
  out << YAML::Key << "limit" << YAML::Value << FormatDouble(quota.limit);
  if (quota.time_quota != 1.0) {  // written only when set, so older specs read the same
    out << YAML::Key << "time_quota" << YAML::Value << FormatDouble(quota.time_quota);
  }
  out << YAML::EndMap;
}

void EmitEnv(YAML::Emitter& out, const std::map<std::string, std::string>& env) {
  out << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : env)
    out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  out << YAML::EndMap;
}

void EmitStage(YAML::Emitter& out, const PipelineStageSpec& s) {
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name;
  EmitLaunchOf(out, s.command, s.image);
  if (s.memory_gib)
    out << YAML::Key << "memory_gib" << YAML::Value << FormatDouble(*s.memory_gib);
  if (s.slo_ms)
    out << YAML::Key << "slo_ms" << YAML::Value << FormatDouble(*s.slo_ms);
  if (s.batching) {
    EmitPair(out, "batching", "max_batch", std::to_string(s.batching->max_batch),
             "max_queue_delay_ms", FormatDouble(s.batching->max_queue_delay_ms));
  }
  if (s.autoscaling) {
    EmitPair(out, "autoscaling", "min", std::to_string(s.autoscaling->min), "max",
             std::to_string(s.autoscaling->max));
  }
  if (s.quota)
    EmitQuota(out, *s.quota);
  if (!s.env.empty())
    EmitEnv(out, s.env);
  out << YAML::EndMap;
}

void EmitPipeline(YAML::Emitter& out, const FunctionSpec& spec) {
  if (spec.pipeline) {
    out << YAML::Key << "pipeline" << YAML::Value << YAML::BeginMap << YAML::Key << "stages"
        << YAML::Value;
    if (spec.pipeline->stages.empty()) {
      out << spec.pipeline->count;
    } else {
      out << YAML::BeginSeq;
      for (const PipelineStageSpec& s : spec.pipeline->stages)
        EmitStage(out, s);
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  if (spec.stage_of) {
    const StageOfSpec& s = *spec.stage_of;
    out << YAML::Key << "stage_of" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "pipeline" << YAML::Value << s.pipeline;
    out << YAML::Key << "index" << YAML::Value << s.index;
    out << YAML::Key << "count" << YAML::Value << s.count;
    out << YAML::Key << "pipeline_slo_ms" << YAML::Value << FormatDouble(s.pipeline_slo_ms);
    out << YAML::EndMap;
  }
}

void EmitOptional(YAML::Emitter& out, const FunctionSpec& spec) {
  if (spec.quota)
    EmitQuota(out, *spec.quota);
  if (spec.queue) {
    EmitPair(out, "queue", "max_length", std::to_string(spec.queue->max_length), "timeout_ms",
             FormatDouble(spec.queue->timeout_ms));
  }
  if (!spec.env.empty())
    EmitEnv(out, spec.env);
  if (spec.training) {
    EmitPair(out, "training", "workers", std::to_string(spec.training->workers), "iterations",
             std::to_string(spec.training->iterations));
  }
  if (spec.llm) {
    out << YAML::Key << "llm" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "disaggregated" << YAML::Value << (spec.llm->disaggregated ? "true" : "false");
    if (spec.llm->disaggregated) {
      out << YAML::Key << "prefill" << YAML::Value << std::to_string(spec.llm->prefill);
      out << YAML::Key << "decode" << YAML::Value << std::to_string(spec.llm->decode);
    }
    out << YAML::EndMap;
  }
  EmitPipeline(out, spec);
  EmitPolicy(out, spec);
}

}  // namespace

std::string FunctionSpecToYaml(const FunctionSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "kind" << YAML::Value << FunctionKindName(spec.kind);
  EmitLaunch(out, spec);
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted << spec.model.path;
  if (!spec.model.name.empty()) {
    out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << spec.model.name;
  }
  out << YAML::EndMap;
  if (spec.slo_ms)
    out << YAML::Key << "slo_ms" << YAML::Value << FormatDouble(*spec.slo_ms);
  out << YAML::Key << "memory_gib" << YAML::Value << FormatDouble(spec.memory_gib);
  out << YAML::Key << "gpus" << YAML::Value << spec.gpus;
  EmitPair(out, "batching", "max_batch", std::to_string(spec.batching.max_batch),
           "max_queue_delay_ms", FormatDouble(spec.batching.max_queue_delay_ms));
  EmitPair(out, "autoscaling", "min", std::to_string(spec.autoscaling.min), "max",
           std::to_string(spec.autoscaling.max));
  EmitOptional(out, spec);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace sluice::runtime
