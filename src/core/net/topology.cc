// Topology construction, presets (BlitzScale Table 1 and its appendix) and path lookup.
// Link layout per node (node_base_[n] is the node's first link): three links per GPU g at
// base + 3g + {0: NVLink or PCIe GPU-GPU, 1: host-GPU, 2: SSD}, then two per NIC k at
// base + 3G + 2k + {0: tx, 1: rx}.
#include "core/net/topology.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"

namespace sluice::core::net {
namespace {

constexpr double kBytesPerGbit = 1e9 / 8.0;
constexpr int kLinksPerGpu = 3;
constexpr int kLinksPerNic = 2;
// Bounds the link count (and so the int link indices) far above any cluster we simulate.
constexpr int64_t kMaxGpus = 1 << 20;

struct Preset {
  const char* name;
  ClusterNetSpec spec;
};

ClusterNetSpec Spec(const char* name, int nodes, double nvlink, double pcie_gg, double rdma,
                    double host, double ssd, double gpu_gib, double host_gib, double price) {
  ClusterNetSpec s;
  s.name = name;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.nvlink_gbps = nvlink;
  s.pcie_gpu_gpu_gbps = pcie_gg;
  s.rdma_gbps = rdma;
  s.gpus_per_nic = 1;
  s.host_gpu_gbps = host;
  s.ssd_gbps_per_gpu = ssd;
  s.gpu_memory = common::Bytes::GiB(gpu_gib);
  s.host_memory_per_node = common::Bytes::GiB(host_gib);
  s.gpu_price_per_hour = price;
  return s;
}

// Sources and every choice are in docs/network-model.md ("Presets"). NVLink figures are per GPU
// per direction (A800 1.6 Tbps as in Table 1; A100 2.4 Tbps; H100 3.6 Tbps); appendix network
// bandwidths are the table's per-GPU figures, one NIC per GPU; prices are per GPU-hour (the
// table's instance price / 8); A800 clusters use the A100 80 GB price of a2-ultragpu-8g.
const std::vector<Preset>& Presets() {
  static const auto* presets = new std::vector<Preset>{
      {"blitzscale-a", Spec("blitzscale-a", 4, 1600, 256, 100, 128, 10, 80, 1024, 40.44 / 8)},
      {"blitzscale-b", Spec("blitzscale-b", 2, 0, 256, 100, 128, 10, 80, 1024, 40.44 / 8)},
      {"a2-ultragpu-8g",
       Spec("a2-ultragpu-8g", 4, 2400, 256, 12.5, 256, 2.58, 80, 1360, 40.44 / 8)},
      {"p4d.24xlarge", Spec("p4d.24xlarge", 4, 2400, 256, 100, 256, 2.31, 40, 1152, 45.039 / 8)},
      {"ml.hpcpni2.28xlarge",
       Spec("ml.hpcpni2.28xlarge", 4, 2400, 256, 100, 256, 4, 80, 1024, 48.23 / 8)},
      {"p4de.24xlarge", Spec("p4de.24xlarge", 4, 2400, 256, 100, 256, 2.31, 80, 1152, 56.328 / 8)},
      {"a3-highgpu-8g", Spec("a3-highgpu-8g", 4, 3600, 512, 100, 512, 6.09, 80, 1872, 88.25 / 8)},
      {"a3-megagpu-8g", Spec("a3-megagpu-8g", 4, 3600, 512, 200, 512, 6.09, 80, 1872, 0)},
      {"p5.48xlarge", Spec("p5.48xlarge", 4, 3600, 512, 400, 512, 9.8, 80, 2048, 0)},
  };
  return *presets;
}

absl::Status FieldError(absl::string_view field, absl::string_view what, double got) {
  return absl::InvalidArgumentError(
      absl::StrCat("network spec field '", field, "': ", what, " (got ", got, ")"));
}

absl::Status CheckPositive(absl::string_view field, double v) {
  if (!std::isfinite(v) || v <= 0) {
    return FieldError(field, "must be a finite number > 0", v);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterNetSpec> NetPreset(absl::string_view name, int nodes) {
  for (const Preset& p : Presets()) {
    if (name == p.name) {
      ClusterNetSpec spec = p.spec;
      if (nodes > 0) {
        spec.nodes = nodes;
      }
      return spec;
    }
  }
  return absl::NotFoundError(absl::StrCat("unknown network preset '", name,
                                          "'; known: ", absl::StrJoin(NetPresetNames(), ", ")));
}

std::vector<std::string> NetPresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : Presets()) {
    names.emplace_back(p.name);
  }
  return names;
}

absl::Status ValidateNetSpec(const ClusterNetSpec& spec) {
  if (spec.nodes < 1) {
    return FieldError("nodes", "must be >= 1", spec.nodes);
  }
  if (spec.gpus_per_node < 1) {
    return FieldError("gpus_per_node", "must be >= 1", spec.gpus_per_node);
  }
  if (static_cast<int64_t>(spec.nodes) * spec.gpus_per_node > kMaxGpus) {
    return FieldError("nodes", absl::StrCat("nodes x gpus_per_node must be <= ", kMaxGpus),
                      static_cast<double>(spec.nodes) * spec.gpus_per_node);
  }
  if (!std::isfinite(spec.nvlink_gbps) || spec.nvlink_gbps < 0) {
    return FieldError("nvlink_gbps", "must be a finite number >= 0 (0 = no NVLink)",
                      spec.nvlink_gbps);
  }
  if (spec.nvlink_gbps == 0) {
    SLUICE_RETURN_IF_ERROR(CheckPositive("pcie_gpu_gpu_gbps", spec.pcie_gpu_gpu_gbps));
  }
  SLUICE_RETURN_IF_ERROR(CheckPositive("rdma_gbps", spec.rdma_gbps));
  if (spec.gpus_per_nic < 1) {
    return FieldError("gpus_per_nic", "must be >= 1", spec.gpus_per_nic);
  }
  SLUICE_RETURN_IF_ERROR(CheckPositive("host_gpu_gbps", spec.host_gpu_gbps));
  SLUICE_RETURN_IF_ERROR(CheckPositive("ssd_gbps_per_gpu", spec.ssd_gbps_per_gpu));
  if (spec.gpu_memory.count() <= 0) {
    return FieldError("gpu_memory", "must be > 0 bytes",
                      static_cast<double>(spec.gpu_memory.count()));
  }
  if (spec.host_memory_per_node.count() < 0) {
    return FieldError("host_memory_per_node", "must be >= 0 bytes",
                      static_cast<double>(spec.host_memory_per_node.count()));
  }
  if (!std::isfinite(spec.gpu_price_per_hour) || spec.gpu_price_per_hour < 0) {
    return FieldError("gpu_price_per_hour", "must be a finite number >= 0 (0 = unknown)",
                      spec.gpu_price_per_hour);
  }
  return absl::OkStatus();
}

absl::Status SetNetSpecField(ClusterNetSpec& spec, absl::string_view field, double value) {
  auto count = [&](int& out) {
    if (!(std::abs(value) < 1e9) || value != std::floor(value)) {
      return FieldError(field, "must be an integer", value);
    }
    out = static_cast<int>(value);
    return absl::OkStatus();
  };
  if (field == "nodes")
    return count(spec.nodes);
  if (field == "gpus_per_node")
    return count(spec.gpus_per_node);
  if (field == "gpus_per_nic")
    return count(spec.gpus_per_nic);
  const std::pair<const char*, double*> doubles[] = {
      {"nvlink_gbps", &spec.nvlink_gbps},
      {"pcie_gpu_gpu_gbps", &spec.pcie_gpu_gpu_gbps},
      {"rdma_gbps", &spec.rdma_gbps},
      {"host_gpu_gbps", &spec.host_gpu_gbps},
      {"ssd_gbps_per_gpu", &spec.ssd_gbps_per_gpu},
      {"gpu_price_per_hour", &spec.gpu_price_per_hour}};
  for (const auto& [name, dst] : doubles) {
    if (field == name) {
      *dst = value;
      return absl::OkStatus();
    }
  }
  if (field == "gpu_memory_gib") {
    spec.gpu_memory = common::Bytes::GiB(value);
    return absl::OkStatus();
  }
  if (field == "host_memory_per_node_gib") {
    spec.host_memory_per_node = common::Bytes::GiB(value);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown network spec field '", field,
      "'; known: nodes, gpus_per_node, nvlink_gbps, pcie_gpu_gpu_gbps, rdma_gbps, gpus_per_nic, "
      "host_gpu_gbps, ssd_gbps_per_gpu, gpu_memory_gib, host_memory_per_node_gib, "
      "gpu_price_per_hour"));
}

absl::StatusOr<Topology> Topology::Build(const ClusterNetSpec& spec) {
  SLUICE_RETURN_IF_ERROR(ValidateNetSpec(spec));
  Topology t;
  t.spec_ = spec;
  const int gpus = spec.gpus_per_node;
  t.nics_per_node_ = (gpus + spec.gpus_per_nic - 1) / spec.gpus_per_nic;
  const bool nvlink = spec.nvlink_gbps > 0;
  const double peer_bps = (nvlink ? spec.nvlink_gbps : spec.pcie_gpu_gpu_gbps) * kBytesPerGbit;
  t.links_.reserve(static_cast<size_t>(spec.nodes) *
                   (kLinksPerGpu * gpus + kLinksPerNic * t.nics_per_node_));
  for (int n = 0; n < spec.nodes; ++n) {
    t.node_base_.push_back(static_cast<int>(t.links_.size()));
    for (int g = 0; g < gpus; ++g) {
      t.links_.push_back({nvlink ? LinkKind::kNvlink : LinkKind::kGpuGpuPcie, n, g, peer_bps});
      t.links_.push_back({LinkKind::kHostGpu, n, g, spec.host_gpu_gbps * kBytesPerGbit});
      t.links_.push_back({LinkKind::kSsd, n, g, spec.ssd_gbps_per_gpu * kBytesPerGbit});
    }
    for (int k = 0; k < t.nics_per_node_; ++k) {
      t.links_.push_back({LinkKind::kNicTx, n, k, spec.rdma_gbps * kBytesPerGbit});
      t.links_.push_back({LinkKind::kNicRx, n, k, spec.rdma_gbps * kBytesPerGbit});
    }
  }
  return t;
}

std::vector<double> Topology::Capacities() const {
  std::vector<double> caps;
  caps.reserve(links_.size());
  for (const Link& l : links_) {
    caps.push_back(l.bytes_per_s);
  }
  return caps;
}

bool Topology::Contains(GpuLoc g) const {
  return g.node >= 0 && g.node < spec_.nodes && g.gpu >= 0 && g.gpu < spec_.gpus_per_node;
}

int Topology::GpuBase(GpuLoc g) const {
  SLUICE_CHECK_MSG(Contains(g), "GPU outside the topology");
  return node_base_[g.node] + kLinksPerGpu * g.gpu;
}

int Topology::GpuPeerLink(GpuLoc g) const {
  return GpuBase(g);
}
int Topology::HostGpuLink(GpuLoc g) const {
  return GpuBase(g) + 1;
}
int Topology::SsdLink(GpuLoc g) const {
  return GpuBase(g) + 2;
}

int Topology::NicOf(GpuLoc g) const {
  return g.gpu / spec_.gpus_per_nic;
}

int Topology::NicTxLink(int node, int nic) const {
  SLUICE_CHECK_MSG(node >= 0 && node < spec_.nodes && nic >= 0 && nic < nics_per_node_,
                   "NIC outside the topology");
  return node_base_[node] + kLinksPerGpu * spec_.gpus_per_node + kLinksPerNic * nic;
}

int Topology::NicRxLink(int node, int nic) const {
  return NicTxLink(node, nic) + 1;
}

bool Topology::SameNvlinkDomain(GpuLoc a, GpuLoc b) const {
  return a.node == b.node && spec_.nvlink_gbps > 0;
}

Path Topology::GpuToGpu(GpuLoc src, GpuLoc dst) const {
  if (src == dst) {
    return {};
  }
  if (src.node == dst.node) {
    return {GpuPeerLink(src), GpuPeerLink(dst)};
  }
  return {NicTxLink(src.node, NicOf(src)), NicRxLink(dst.node, NicOf(dst))};
}

Path Topology::HostToGpu(int node, GpuLoc dst) const {
  if (node == dst.node) {
    return {HostGpuLink(dst)};
  }
  return {NicTxLink(node, 0), NicRxLink(dst.node, NicOf(dst)), HostGpuLink(dst)};
}

Path Topology::SsdToGpu(GpuLoc dst) const {
  return {SsdLink(dst), HostGpuLink(dst)};
}

double Topology::PathCapacity(const Path& path) const {
  double cap = std::numeric_limits<double>::infinity();
  for (int l : path) {
    cap = std::min(cap, links_[l].bytes_per_s);
  }
  return cap;
}

}  // namespace sluice::core::net
