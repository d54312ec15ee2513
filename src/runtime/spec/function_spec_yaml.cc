// FunctionSpecToYaml: writes a spec back as block YAML (the registry persists this text).
// Doubles go out in shortest round-trip form so parse(ToYaml(spec)) == spec exactly.
#include <charconv>

#include "runtime/spec/function_spec.h"
#include "yaml-cpp/yaml.h"

namespace sluice::runtime {
namespace {

std::string FormatDouble(double value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, result.ptr);
}

void EmitLaunch(YAML::Emitter& out, const FunctionSpec& spec) {
  if (!spec.image.empty()) {
    out << YAML::Key << "image" << YAML::Value << spec.image;
    return;
  }
  out << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& arg : spec.command)
    out << YAML::DoubleQuoted << arg;
  out << YAML::EndSeq;
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

void EmitOptional(YAML::Emitter& out, const FunctionSpec& spec) {
  if (spec.quota) {
    out << YAML::Key << "quota" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "request" << YAML::Value << FormatDouble(spec.quota->request);
    out << YAML::Key << "limit" << YAML::Value << FormatDouble(spec.quota->limit);
    if (spec.quota->time_quota != 1.0) {  // written only when set, so older specs read the same
      out << YAML::Key << "time_quota" << YAML::Value << FormatDouble(spec.quota->time_quota);
    }
    out << YAML::EndMap;
  }
  if (spec.queue) {
    EmitPair(out, "queue", "max_length", std::to_string(spec.queue->max_length), "timeout_ms",
             FormatDouble(spec.queue->timeout_ms));
  }
  if (!spec.env.empty()) {
    out << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : spec.env) {
      out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
    }
    out << YAML::EndMap;
  }
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
