// Hop geometry of the multicast plan (declared in multicast_plan.h): the path of each tensor-
// parallel shard of a hop and the hop's aggregate bandwidth when alone on the network.
#include <algorithm>
#include <limits>
#include <utility>

#include "core/blitz/multicast_plan.h"

namespace sluice::core::blitz {

using net::GpuLoc;
using net::Topology;

std::vector<net::Path> ShardPaths(const Endpoint& from, const Endpoint& to,
                                  const Topology& topology) {
  std::vector<net::Path> paths;
  if (from.kind == Endpoint::Kind::kSsd && from.node != to.node) {
    return paths;
  }
  for (size_t i = 0; i < to.gpus.size(); ++i) {
    const GpuLoc dst{to.node, to.gpus[i]};
    if (from.kind == Endpoint::Kind::kGpuInstance) {
      paths.push_back(topology.GpuToGpu({from.node, from.gpus[i % from.gpus.size()]}, dst));
    } else if (from.kind == Endpoint::Kind::kHost) {
      paths.push_back(topology.HostToGpu(from.node, dst));
    } else {
      paths.push_back(topology.SsdToGpu(dst));
    }
  }
  return paths;
}

double HopBandwidth(const Endpoint& from, const Endpoint& to, const Topology& topology) {
  const std::vector<net::Path> paths = ShardPaths(from, to, topology);
  if (paths.empty()) {
    return 0;
  }
  // Equal split: every shard gets min over links of capacity / shards on the link.
  std::vector<std::pair<int, int>> uses;  // (link, shards crossing it)
  for (const net::Path& path : paths) {
    for (int l : path) {
      auto it = std::find_if(uses.begin(), uses.end(), [l](auto& p) { return p.first == l; });
      if (it == uses.end()) {
        uses.emplace_back(l, 1);
      } else {
        ++it->second;
      }
    }
  }
  double per_shard = std::numeric_limits<double>::infinity();
  for (const auto& [link, n] : uses) {
    per_shard = std::min(per_shard, topology.link(link).bytes_per_s / n);
  }
  return per_shard * static_cast<double>(paths.size());
}

}  // namespace sluice::core::blitz
