// `cluster:` of an llm_serving experiment: a core::net preset (BlitzScale's Table 1 clusters, the
// appendix instance types) with per-field overrides, validated by core::net::ValidateNetSpec.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "common/units.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/llm_experiment/llm_loader_internal.h"

namespace sluice::sim::llm::internal {
namespace {

using core::net::ClusterNetSpec;

// A positive bandwidth / size override in place, or the preset's value when the key is absent.
absl::Status Override(const StrictMap& m, absl::string_view key, Range range, double& value) {
  SLUICE_ASSIGN_OR_RETURN(value, m.Double(key, range, value));
  return absl::OkStatus();
}

absl::Status OverrideInt(const StrictMap& m, absl::string_view key, int& value) {
  SLUICE_ASSIGN_OR_RETURN(int64_t v, m.Int(key, Range::kPositive, value));
  if (v > 100000)
    return m.ErrorAt(key, "must be <= 100000");
  value = static_cast<int>(v);
  return absl::OkStatus();
}

absl::Status OverrideGiB(const StrictMap& m, absl::string_view key, common::Bytes& value) {
  double gib = value.gib();
  SLUICE_RETURN_IF_ERROR(Override(m, key, Range::kPositive, gib));
  if (gib > 1e9)
    return m.ErrorAt(key, "must be <= 1e9 GiB");
  value = common::Bytes::GiB(gib);
  return absl::OkStatus();
}

absl::StatusOr<ClusterNetSpec> StartFrom(const StrictMap& m) {
  if (!m.Has("preset"))
    return ClusterNetSpec{};
  SLUICE_ASSIGN_OR_RETURN(std::string preset, m.String("preset", std::nullopt));
  absl::StatusOr<ClusterNetSpec> spec = core::net::NetPreset(preset);
  if (!spec.ok()) {
    return m.ErrorAt("preset", absl::StrCat("unknown preset '", preset, "' (known: ",
                                            absl::StrJoin(core::net::NetPresetNames(), ", "), ")"));
  }
  return spec;
}

}  // namespace

absl::StatusOr<ClusterNetSpec> ParseLlmCluster(const YAML::Node& node, const std::string& file) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap m, StrictMap::Create(node, file, "cluster",
                                     {"preset", "name", "nodes", "gpus_per_node", "nvlink_gbps",
                                      "pcie_gpu_gpu_gbps", "rdma_gbps", "gpus_per_nic",
                                      "host_gpu_gbps", "ssd_gbps_per_gpu", "gpu_memory_gib",
                                      "host_memory_per_node_gib", "gpu_price_per_hour"}));
  SLUICE_ASSIGN_OR_RETURN(ClusterNetSpec spec, StartFrom(m));
  if (m.Has("name") || spec.name.empty()) {
    SLUICE_ASSIGN_OR_RETURN(spec.name, m.Name("name", spec.name.empty() ? "custom" : spec.name));
  }
  SLUICE_RETURN_IF_ERROR(OverrideInt(m, "nodes", spec.nodes));
  SLUICE_RETURN_IF_ERROR(OverrideInt(m, "gpus_per_node", spec.gpus_per_node));
  SLUICE_RETURN_IF_ERROR(OverrideInt(m, "gpus_per_nic", spec.gpus_per_nic));
  SLUICE_RETURN_IF_ERROR(Override(m, "nvlink_gbps", Range::kNonNegative, spec.nvlink_gbps));
  for (auto [key, value] :
       {std::pair<const char*, double*>{"pcie_gpu_gpu_gbps", &spec.pcie_gpu_gpu_gbps},
        {"rdma_gbps", &spec.rdma_gbps},
        {"host_gpu_gbps", &spec.host_gpu_gbps},
        {"ssd_gbps_per_gpu", &spec.ssd_gbps_per_gpu}}) {
    SLUICE_RETURN_IF_ERROR(Override(m, key, Range::kPositive, *value));
  }
  SLUICE_RETURN_IF_ERROR(OverrideGiB(m, "gpu_memory_gib", spec.gpu_memory));
  SLUICE_RETURN_IF_ERROR(OverrideGiB(m, "host_memory_per_node_gib", spec.host_memory_per_node));
  SLUICE_RETURN_IF_ERROR(
      Override(m, "gpu_price_per_hour", Range::kNonNegative, spec.gpu_price_per_hour));
  if (spec.gpus_per_nic > spec.gpus_per_node) {
    return m.ErrorAt("gpus_per_nic",
                     absl::StrCat("must be <= gpus_per_node (", spec.gpus_per_node, ")"));
  }
  if (const absl::Status s = core::net::ValidateNetSpec(spec); !s.ok()) {
    return YamlError(file, node, "cluster", s.message());
  }
  return spec;
}

}  // namespace sluice::sim::llm::internal
