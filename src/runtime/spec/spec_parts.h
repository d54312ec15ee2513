// Internal to sluice_runtime_spec: the parsers of the spec's parts, shared by function_spec.cc
// (the whole spec) and function_spec_pipeline.cc (a pipeline's stages reuse the launch,
// batching, autoscaling, quota and env parsers on each stage's mapping). Each reads its key(s)
// from `root` into `spec` and returns an InputError naming the field. Thread-safe: pure.
#ifndef SLUICE_RUNTIME_SPEC_SPEC_PARTS_H_
#define SLUICE_RUNTIME_SPEC_SPEC_PARTS_H_

#include <string>

#include "absl/status/status.h"

#include "runtime/spec/function_spec.h"
#include "runtime/spec/yaml_reader.h"

namespace sluice::runtime::spec_internal {

bool IsDnsLabel(const std::string& s);

// function_spec.cc.
[[nodiscard]] absl::Status ParseLaunch(const YamlReader& r, const YAML::Node& root,
                                       FunctionSpec& spec);
[[nodiscard]] absl::Status ParseBatching(const YamlReader& r, const YAML::Node& root,
                                         FunctionSpec& spec);
[[nodiscard]] absl::Status ParseAutoscaling(const YamlReader& r, const YAML::Node& root,
                                            FunctionSpec& spec);
[[nodiscard]] absl::Status ParseQuota(const YamlReader& r, const YAML::Node& root,
                                      FunctionSpec& spec);
[[nodiscard]] absl::Status ParseEnv(const YamlReader& r, const YAML::Node& root,
                                    FunctionSpec& spec);

// function_spec_pipeline.cc: `pipeline` (kind inference only; stage count >= 1; stage names
// unique DNS labels whose function names "<name>-<stage>" fit 63 chars; every stage has a
// command or image of its own or the pipeline's) and `stage_of`.
[[nodiscard]] absl::Status ParsePipeline(const YamlReader& r, const YAML::Node& root,
                                         FunctionSpec& spec);
[[nodiscard]] absl::Status ParseStageOf(const YamlReader& r, const YAML::Node& root,
                                        FunctionSpec& spec);

}  // namespace sluice::runtime::spec_internal

#endif  // SLUICE_RUNTIME_SPEC_SPEC_PARTS_H_
