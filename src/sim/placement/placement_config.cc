// Top level, cluster and instance sources (policies, sensitivity and paper are in
// placement_config_policies.cc). Section by section over yaml-cpp nodes with sim::StrictMap
// (src/sim/experiment/yaml_fields.h), so that messages have the same shape as the engine
// experiments'. yaml-cpp throws only while parsing the text; that is caught at the boundary.
#include "sim/placement/placement_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/placement/placement_config_internal.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim {
namespace {

constexpr int64_t kMaxNodes = 1000000;
constexpr int64_t kMaxGpusPerNode = 64;

absl::StatusOr<core::GpuSpec> ParseGpu(const YAML::Node& node, const std::string& file,
                                       const std::string& field) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap m, StrictMap::Create(node, file, field, {"model", "memory_gib", "sm_count"}));
  core::GpuSpec gpu;
  SLUICE_ASSIGN_OR_RETURN(gpu.model, m.String("model", gpu.model));
  SLUICE_ASSIGN_OR_RETURN(double mem, m.Double("memory_gib", Range::kPositive, 40.0));
  if (mem > 1e6)
    return m.ErrorAt("memory_gib", "must be <= 1e6");
  gpu.memory = core::Bytes::GiB(mem);
  SLUICE_ASSIGN_OR_RETURN(int64_t sm, m.Int("sm_count", Range::kPositive, gpu.sm_count));
  if (sm > 100000)
    return m.ErrorAt("sm_count", "must be <= 100000");
  gpu.sm_count = static_cast<int>(sm);
  return gpu;
}

absl::StatusOr<core::ClusterSpec> ParseCluster(const StrictMap& top) {
  if (!top.Has("cluster"))
    return top.ErrorAt("cluster", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(top.Get("cluster"), top.file(), "cluster",
                                                         {"nodes", "gpus_per_node", "gpu"}));
  SLUICE_ASSIGN_OR_RETURN(int64_t nodes, m.Int("nodes", Range::kPositive, std::nullopt));
  if (nodes > kMaxNodes)
    return m.ErrorAt("nodes", "must be <= 1000000");
  core::NodeSpec node;
  SLUICE_ASSIGN_OR_RETURN(int64_t gpus, m.Int("gpus_per_node", Range::kPositive, 4));
  if (gpus > kMaxGpusPerNode)
    return m.ErrorAt("gpus_per_node", "must be <= 64");
  node.gpu_count = static_cast<int>(gpus);
  if (m.Has("gpu")) {
    SLUICE_ASSIGN_OR_RETURN(node.gpu, ParseGpu(m.Get("gpu"), top.file(), m.FieldOf("gpu")));
  }
  return core::ClusterSpec::Uniform(static_cast<int>(nodes), node);
}

// "instances-3200.txt.xz" -> "instances-3200".
std::string StemOf(const std::string& path) {
  std::string base = std::filesystem::path(path).filename().string();
  for (absl::string_view ext : {".xz", ".txt"}) {
    if (base.size() > ext.size() && absl::EndsWith(base, ext))
      base.resize(base.size() - ext.size());
  }
  return base;
}

bool ListExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ||
         std::filesystem::is_regular_file(path + ".xz", ec);
}

absl::Status ParseSynthetic(const StrictMap& m, InstanceSource& src) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap s,
      StrictMap::Create(m.Get("synthetic"), m.file(), m.FieldOf("synthetic"), {"count", "seed"}));
  SyntheticInstancesConfig cfg;
  SLUICE_ASSIGN_OR_RETURN(int64_t count, s.Int("count", Range::kPositive, std::nullopt));
  if (count > 1000000)
    return s.ErrorAt("count", "must be <= 1000000");
  cfg.count = static_cast<int>(count);
  src.synthetic_seed_given = s.Has("seed");
  SLUICE_ASSIGN_OR_RETURN(int64_t seed, s.Int("seed", Range::kNonNegative, 0));
  cfg.seed = static_cast<uint64_t>(seed);
  src.synthetic = cfg;
  return absl::OkStatus();
}

absl::StatusOr<InstanceSource> ParseSource(const YAML::Node& node, const std::string& file,
                                           const std::string& field, const std::string& base_dir) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap m,
                          StrictMap::Create(node, file, field, {"name", "path", "synthetic"}));
  if (!m.Has("path") && !m.Has("synthetic")) {
    return m.ErrorAt("path", "give a path, a synthetic: {count, seed} generator, or both");
  }
  InstanceSource src;
  if (m.Has("synthetic"))
    SLUICE_RETURN_IF_ERROR(ParseSynthetic(m, src));
  if (m.Has("path")) {
    SLUICE_ASSIGN_OR_RETURN(std::string path, m.String("path", std::nullopt));
    src.path = std::filesystem::path(path).is_absolute()
                   ? path
                   : (std::filesystem::path(base_dir) / path).lexically_normal().string();
    if (!src.synthetic && !ListExists(src.path)) {
      return m.ErrorAt("path", absl::StrCat("no such file: ", src.path,
                                            " (add synthetic: {count: N} as a fallback)"));
    }
  }
  const std::string fallback =
      src.path.empty() ? absl::StrCat("synthetic-", src.synthetic->count) : StemOf(src.path);
  SLUICE_ASSIGN_OR_RETURN(src.name, m.Name("name", fallback));
  if (!IsValidName(src.name))
    return m.ErrorAt("path", "its file name is not a valid name; add name:");
  return src;
}

absl::StatusOr<std::vector<InstanceSource>> ParseInstances(const StrictMap& top,
                                                           const std::string& base_dir) {
  if (!top.Has("instances"))
    return top.ErrorAt("instances", "required field is missing");
  const YAML::Node node = top.Get("instances");
  std::vector<InstanceSource> sources;
  if (node.IsMap()) {
    SLUICE_ASSIGN_OR_RETURN(InstanceSource s, ParseSource(node, top.file(), "instances", base_dir));
    sources.push_back(std::move(s));
    return sources;
  }
  if (!node.IsSequence() || node.size() == 0) {
    return top.ErrorAt("instances",
                       "must be a source {path, synthetic} or a non-empty list of them");
  }
  size_t i = 0;
  for (const YAML::Node& item : node) {
    const std::string field = absl::StrCat("instances[", i++, "]");
    SLUICE_ASSIGN_OR_RETURN(InstanceSource s, ParseSource(item, top.file(), field, base_dir));
    for (const InstanceSource& o : sources) {
      if (o.name == s.name) {
        return YamlError(top.file(), item, field,
                         absl::StrCat("duplicate workload name '", s.name, "' (add name:)"));
      }
    }
    sources.push_back(std::move(s));
  }
  return sources;
}

absl::Status ParseTop(const StrictMap& top, PlacementExperimentConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(const std::string kind, top.String("kind", std::nullopt));
  if (kind != "placement_replay") {
    return top.ErrorAt("kind", absl::StrCat("must be placement_replay, got '", kind, "'"));
  }
  const std::string stem = std::filesystem::path(c.file).stem().string();
  SLUICE_ASSIGN_OR_RETURN(c.experiment, top.Name("experiment", stem.empty() ? "experiment" : stem));
  SLUICE_ASSIGN_OR_RETURN(c.description, top.String("description", ""));
  SLUICE_ASSIGN_OR_RETURN(int64_t seed, top.Int("seed", Range::kNonNegative, 1));
  c.seed = static_cast<uint64_t>(seed);
  SLUICE_ASSIGN_OR_RETURN(c.cluster, ParseCluster(top));
  const std::string base_dir = std::filesystem::path(c.file).parent_path().string();
  SLUICE_ASSIGN_OR_RETURN(c.instances, ParseInstances(top, base_dir.empty() ? "." : base_dir));
  SLUICE_ASSIGN_OR_RETURN(c.policies, internal::ParsePolicies(top));
  SLUICE_RETURN_IF_ERROR(internal::ParseSensitivity(top, c.policies));
  return internal::ParsePaper(top, c);
}

}  // namespace

absl::StatusOr<PlacementExperimentConfig> ParsePlacementExperiment(const std::string& text,
                                                                   const std::string& path) {
  PlacementExperimentConfig c;
  c.file = path;
  try {
    const YAML::Node root = YAML::Load(text);
    SLUICE_ASSIGN_OR_RETURN(
        StrictMap top, StrictMap::Create(root, path, "",
                                         {"experiment", "kind", "description", "seed", "cluster",
                                          "instances", "policies", "sensitivity", "paper"}));
    SLUICE_RETURN_IF_ERROR(ParseTop(top, c));
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() || e.mark.line < 0 ? 0 : e.mark.line + 1;
    return common::InputError({path, line}, "", absl::StrCat("malformed YAML: ", e.msg));
  }
  return c;
}

absl::StatusOr<PlacementExperimentConfig> LoadPlacementExperiment(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadExperimentFile(path));
  return ParsePlacementExperiment(text, path);
}

absl::StatusOr<std::string> ReadExperimentKind(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadExperimentFile(path));
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap() || !root["kind"])
      return std::string();
    const YAML::Node kind = root["kind"];
    if (!kind.IsScalar())
      return YamlError(path, kind, "kind", "must be a single value");
    return kind.Scalar();
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() || e.mark.line < 0 ? 0 : e.mark.line + 1;
    return common::InputError({path, line}, "", absl::StrCat("malformed YAML: ", e.msg));
  }
}

}  // namespace sluice::sim
