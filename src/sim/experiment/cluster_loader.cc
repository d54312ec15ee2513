// The `cluster:` section: one uniform group of nodes (flat keys) or a list of `node_groups`,
// with GPU presets so that `gpu: A100-40GB` is enough (spec-sheet numbers and an on-demand price
// per GPU-hour, docs/experiments.md says where each price comes from).
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/experiment/loader_internal.h"
#include "sim/experiment/yaml_fields.h"

namespace sluice::sim::internal {
namespace {

struct GpuPreset {
  const char* model;
  int sm_count;
  double memory_gib;
  double price_per_hour;  // US dollars per GPU-hour, on demand (docs/experiments.md: sources)
};

// Public spec-sheet values (SM count, memory) of common data-centre GPUs, and a public on-demand
// price per GPU-hour (V100: Google Cloud's $2.48, the price HAS-GPU's cost figures use).
constexpr std::array<GpuPreset, 9> kGpuPresets = {{
    {"A100-40GB", 108, 40, 2.93},
    {"A100-80GB", 108, 80, 3.93},
    {"H100-80GB", 132, 80, 11.06},
    {"H200-141GB", 132, 141, 10.60},
    {"V100-16GB", 80, 16, 2.48},
    {"V100-32GB", 80, 32, 2.48},
    {"A10-24GB", 72, 24, 1.006},
    {"L4-24GB", 58, 24, 0.56},
    {"T4-16GB", 40, 16, 0.35},
}};

const GpuPreset* FindPreset(absl::string_view model) {
  for (const GpuPreset& p : kGpuPresets) {
    if (absl::EqualsIgnoreCase(p.model, model)) return &p;
  }
  return nullptr;
}

std::string PresetNames() {
  std::string names;
  for (const GpuPreset& p : kGpuPresets) absl::StrAppend(&names, names.empty() ? "" : ", ", p.model);
  return names;
}

// The preset price of `model`, 0 for a GPU that is not a preset.
double PresetPrice(absl::string_view model) {
  const GpuPreset* p = FindPreset(model);
  return p == nullptr ? 0.0 : p->price_per_hour;
}

// `gpu:` as a preset name or {model, sm_count, memory_gib}; a known model fills missing numbers.
absl::StatusOr<core::GpuSpec> ParseGpu(const YAML::Node& node, const std::string& file,
                                       const std::string& field) {
  if (node.IsScalar()) {
    const GpuPreset* preset = FindPreset(node.Scalar());
    if (preset == nullptr) {
      return YamlError(file, node, field,
                       absl::StrCat("unknown GPU '", node.Scalar(), "' (presets: ", PresetNames(),
                                    "); give {model, sm_count, memory_gib}"));
    }
    return core::GpuSpec{preset->model, preset->sm_count, core::Bytes::GiB(preset->memory_gib)};
  }
  SLUICE_ASSIGN_OR_RETURN(StrictMap m,
                          StrictMap::Create(node, file, field, {"model", "sm_count", "memory_gib"}));
  SLUICE_ASSIGN_OR_RETURN(std::string model, m.String("model", std::nullopt));
  const GpuPreset* preset = FindPreset(model);
  std::optional<int64_t> sm_default;
  std::optional<double> mem_default;
  if (preset != nullptr) {
    sm_default = preset->sm_count;
    mem_default = preset->memory_gib;
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t sm, m.Int("sm_count", Range::kPositive, sm_default));
  if (sm > 100000) return m.ErrorAt("sm_count", "must be <= 100000");
  SLUICE_ASSIGN_OR_RETURN(double mem, m.Double("memory_gib", Range::kPositive, mem_default));
  return core::GpuSpec{model, static_cast<int>(sm), core::Bytes::GiB(mem)};
}

constexpr int kMaxNodes = 1000000;

struct NodeGroup {
  int count = 0;
  core::NodeSpec shape;
  double price_per_hour = 0;  // of one of its GPUs
};

// The node shape keys shared by the flat form and each group.
absl::StatusOr<NodeGroup> ParseNodeGroup(const StrictMap& m) {
  NodeGroup g;
  core::NodeSpec& n = g.shape;
  SLUICE_ASSIGN_OR_RETURN(int64_t nodes, m.Int("nodes", Range::kPositive, std::nullopt));
  if (nodes > kMaxNodes) return m.ErrorAt("nodes", absl::StrCat("must be <= ", kMaxNodes));
  g.count = static_cast<int>(nodes);
  SLUICE_ASSIGN_OR_RETURN(int64_t gpus, m.Int("gpus_per_node", Range::kPositive, n.gpu_count));
  if (gpus > 1024) return m.ErrorAt("gpus_per_node", "must be <= 1024");
  n.gpu_count = static_cast<int>(gpus);
  if (!m.Has("gpu")) return m.ErrorAt("gpu", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(n.gpu, ParseGpu(m.Get("gpu"), m.file(), m.FieldOf("gpu")));
  SLUICE_ASSIGN_OR_RETURN(g.price_per_hour, m.Double("gpu_price_per_hour", Range::kNonNegative,
                                                     PresetPrice(n.gpu.model)));
  SLUICE_ASSIGN_OR_RETURN(int64_t cores, m.Int("cpu_cores", Range::kPositive, n.cpu_cores));
  n.cpu_cores = static_cast<int>(std::min<int64_t>(cores, 1 << 20));
  SLUICE_ASSIGN_OR_RETURN(double host,
                          m.Double("host_memory_gib", Range::kPositive, n.host_memory.gib()));
  n.host_memory = core::Bytes::GiB(host);
  SLUICE_ASSIGN_OR_RETURN(double storage, m.Double("storage_gbps", Range::kPositive, 2.0));
  n.storage_bandwidth = core::Bandwidth::GiBPerSecond(storage);
  SLUICE_ASSIGN_OR_RETURN(double pcie, m.Double("pcie_gbps", Range::kPositive, 16.0));
  n.pcie_bandwidth = core::Bandwidth::GiBPerSecond(pcie);
  return g;
}

#define SLUICE_NODE_SHAPE_KEYS                                                                  \
  "nodes", "gpus_per_node", "gpu", "cpu_cores", "host_memory_gib", "storage_gbps", "pcie_gbps", \
      "gpu_price_per_hour"

void AppendGroup(const NodeGroup& g, const std::string& prefix, ParsedCluster& out) {
  core::ClusterSpec group = core::ClusterSpec::Uniform(g.count, g.shape, prefix);
  for (core::NodeSpec& n : group.nodes) {
    out.spec.nodes.push_back(std::move(n));
    out.gpu_price_per_hour.push_back(g.price_per_hour);
  }
}

absl::StatusOr<ParsedCluster> ParseGroups(const YAML::Node& list, const std::string& file,
                                          const std::string& field) {
  if (!list.IsSequence() || list.size() == 0) {
    return YamlError(file, list, field, "must be a non-empty list of node groups");
  }
  ParsedCluster cluster;
  std::vector<std::string> names;
  size_t i = 0;
  for (const YAML::Node& item : list) {
    const std::string gfield = absl::StrCat(field, "[", i, "]");
    SLUICE_ASSIGN_OR_RETURN(
        StrictMap m, StrictMap::Create(item, file, gfield, {"name", SLUICE_NODE_SHAPE_KEYS}));
    SLUICE_ASSIGN_OR_RETURN(NodeGroup g, ParseNodeGroup(m));
    SLUICE_ASSIGN_OR_RETURN(std::string name, m.String("name", absl::StrCat("group", i)));
    ++i;
    for (const std::string& n : names) {
      if (n == name) return m.ErrorAt("name", absl::StrCat("duplicate node group '", name, "'"));
    }
    names.push_back(name);
    if (cluster.spec.nodes.size() + g.count > static_cast<size_t>(kMaxNodes)) {
      return m.ErrorAt("nodes", absl::StrCat("the cluster must have <= ", kMaxNodes, " nodes"));
    }
    AppendGroup(g, name, cluster);
  }
  return cluster;
}

}  // namespace

absl::StatusOr<ParsedCluster> ParseCluster(const YAML::Node& node, const std::string& file) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap m, StrictMap::Create(node, file, "cluster", {"node_groups", SLUICE_NODE_SHAPE_KEYS}));
  if (m.Has("node_groups")) {
    if (m.Keys().size() > 1) {
      return m.ErrorAt("node_groups", "give either node_groups or the flat node keys, not both");
    }
    return ParseGroups(m.Get("node_groups"), file, m.FieldOf("node_groups"));
  }
  SLUICE_ASSIGN_OR_RETURN(NodeGroup g, ParseNodeGroup(m));
  ParsedCluster cluster;
  AppendGroup(g, "node", cluster);
  return cluster;
}

#undef SLUICE_NODE_SHAPE_KEYS

}  // namespace sluice::sim::internal
