// Cluster network and storage topology shared by every user of data movement (BlitzScale's
// parameter multicast, KV-cache transfers, QUART's stage-to-stage activations, cold-start loads):
// links with capacities (NVLink, intra-node PCIe, NIC tx/rx, host-GPU PCIe, SSD) and the path a
// transfer between two endpoints takes. Pure data; thread-compatible, immutable once built.
//
// CONTRACT (lead, issue 10): the signatures here are shared by src/core/blitz, src/core/llm and
// src/sim/llm. Extend, do not change them.
#ifndef SLUICE_CORE_NET_TOPOLOGY_H_
#define SLUICE_CORE_NET_TOPOLOGY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/units.h"

namespace sluice::core::net {

// Bandwidths in the spec are in gigabits per second (the unit of BlitzScale's Table 1 and of
// vendors' data sheets); links store bytes per second.
struct ClusterNetSpec {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 8;
  // Per-GPU NVLink bandwidth; 0 = no NVLink (intra-node GPU-GPU then uses pcie_gpu_gpu_gbps).
  double nvlink_gbps = 0;
  double pcie_gpu_gpu_gbps = 256;  // intra-node GPU-GPU without NVLink
  double rdma_gbps = 100;          // per NIC, each direction (full duplex: tx and rx are links)
  int gpus_per_nic = 1;            // GPUs sharing one NIC
  double host_gpu_gbps = 128;      // host memory <-> one GPU over PCIe
  double ssd_gbps_per_gpu = 10;    // local SSD read bandwidth available to one GPU
  common::Bytes gpu_memory = common::Bytes::GiB(80);
  common::Bytes host_memory_per_node = common::Bytes::GiB(1024);
  double gpu_price_per_hour = 0;   // USD per GPU-hour, 0 = unknown
};

// Presets: "blitzscale-a" (Table 1 cluster A: 4 x 8 A800, 1.6 Tbps NVLink, 100 Gbps RDMA,
// 128 Gbps PCIe, 10 Gbps SSD), "blitzscale-b" (cluster B: 2 x 8 A100, no NVLink, 256 Gbps PCIe
// GPU-GPU), and the appendix instance types ("a2-ultragpu-8g", "p4d.24xlarge", ...). `nodes`
// overrides the preset's node count when > 0. NotFound naming the known presets otherwise.
absl::StatusOr<ClusterNetSpec> NetPreset(absl::string_view name, int nodes = 0);
std::vector<std::string> NetPresetNames();
// InvalidArgument naming the field ("nodes", "rdma_gbps", ...) when a value is out of range.
absl::Status ValidateNetSpec(const ClusterNetSpec& spec);
// Added. Sets one numeric field by its name (as in an experiment file's `network:` overrides):
// nodes, gpus_per_node, nvlink_gbps, pcie_gpu_gpu_gbps, rdma_gbps, gpus_per_nic, host_gpu_gbps,
// ssd_gbps_per_gpu, gpu_memory_gib, host_memory_per_node_gib, gpu_price_per_hour. InvalidArgument
// naming an unknown field (and the known ones) or a non-integer count; ranges are checked by
// ValidateNetSpec.
[[nodiscard]] absl::Status SetNetSpecField(ClusterNetSpec& spec, absl::string_view field,
                                           double value);

struct GpuLoc {
  int node = 0;
  int gpu = 0;  // index within the node
  friend bool operator==(GpuLoc, GpuLoc) = default;
};

enum class LinkKind {
  kNvlink,      // one per GPU (its NVLink port bandwidth), used by both directions' transfers
  kGpuGpuPcie,  // one per GPU when the node has no NVLink
  kNicTx,       // one per NIC: outgoing traffic (outcast)
  kNicRx,       // one per NIC: incoming traffic (incast)
  kHostGpu,     // one per GPU: host memory <-> GPU over PCIe
  kSsd,         // one per GPU: the GPU's share of local SSD read bandwidth
};

struct Link {
  LinkKind kind = LinkKind::kNvlink;
  int node = 0;
  int index = 0;  // GPU index for per-GPU links, NIC index for NIC links
  double bytes_per_s = 0;
};

// A path is the list of link indices a transfer crosses; its rate is shared max-min fairly with
// every other flow on those links (FlowNetwork).
using Path = std::vector<int>;

class Topology {
 public:
  static absl::StatusOr<Topology> Build(const ClusterNetSpec& spec);

  const ClusterNetSpec& spec() const { return spec_; }
  int num_links() const { return static_cast<int>(links_.size()); }
  const Link& link(int i) const { return links_[i]; }
  std::vector<double> Capacities() const;  // bytes/s per link, for FlowNetwork

  // GPU -> GPU: same node: both GPUs' NVLink links (or PCIe GPU-GPU links); other node: the
  // source NIC's tx and the destination NIC's rx (GPUDirect RDMA). Empty when src == dst.
  Path GpuToGpu(GpuLoc src, GpuLoc dst) const;
  // Host memory of `node` -> GPU: the GPU's host link when local; otherwise the source node's
  // first NIC tx, the destination NIC rx and the destination GPU's host link.
  Path HostToGpu(int node, GpuLoc dst) const;
  // Local SSD -> GPU: the GPU's SSD link and host link (SSD reads land via host memory).
  Path SsdToGpu(GpuLoc dst) const;
  // Bottleneck capacity of a path in bytes/s (infinity for an empty path).
  double PathCapacity(const Path& path) const;
  bool SameNvlinkDomain(GpuLoc a, GpuLoc b) const;  // same node and the node has NVLink
  int NicOf(GpuLoc g) const;                         // NIC index within the node
  int NicTxLink(int node, int nic) const;
  int NicRxLink(int node, int nic) const;

  // Added for the planner and the simulator (not in the original contract).
  int num_nodes() const { return spec_.nodes; }
  int gpus_per_node() const { return spec_.gpus_per_node; }
  int nics_per_node() const { return nics_per_node_; }
  bool Contains(GpuLoc g) const;  // node and gpu index in range
  // Per-GPU links: NVLink port (or intra-node PCIe GPU-GPU when the node has no NVLink), host
  // link and SSD link of `g` (which must be Contains()).
  int GpuPeerLink(GpuLoc g) const;
  int HostGpuLink(GpuLoc g) const;
  int SsdLink(GpuLoc g) const;

 private:
  int GpuBase(GpuLoc g) const;

  int nics_per_node_ = 1;
  ClusterNetSpec spec_;
  std::vector<Link> links_;
  // Per node: first link index of each kind (layout chosen by the implementation).
  std::vector<int> node_base_;
};

}  // namespace sluice::core::net

#endif  // SLUICE_CORE_NET_TOPOLOGY_H_
