// Affinity hooks: per-function GPU counts, and the partner-worker grouping of Dilu's Figure.
#include "core/dilu/affinity.h"

#include <algorithm>

namespace sluice::core {

void FunctionGpus::Add(FunctionId f, GpuId g) {
  ++map_[f][g];
}

void FunctionGpus::Remove(FunctionId f, GpuId g) {
  auto it = map_.find(f);
  if (it == map_.end())
    return;
  auto jt = it->second.find(g);
  if (jt == it->second.end())
    return;
  // A function's map stays when it empties: a re-quota (parking) removes and re-adds the same
  // GPU, and a rebuilt map would allocate each time.
  if (--jt->second <= 0)
    it->second.erase(jt);
}

const absl::flat_hash_map<GpuId, int>* FunctionGpus::Of(FunctionId f) const {
  auto it = map_.find(f);
  return it == map_.end() ? nullptr : &it->second;
}

bool FunctionGpus::Hosts(FunctionId f, GpuId g) const {
  const auto* gpus = Of(f);
  return gpus != nullptr && gpus->contains(g);
}

void SameFunctionAffinity::Candidates(const InstanceDemand& demand, const ClusterState& state,
                                      std::vector<GpuId>& out) const {
  const auto* gpus = gpus_.Of(demand.function);
  if (gpus == nullptr)
    return;
  for (const auto& [gpu, count] : *gpus)
    out.push_back(gpu);
  std::sort(out.begin(), out.end());  // deterministic order regardless of hashing
}

void PartnerWorkersAffinity::OnAdded(const Allocation& a) {
  gpus_.Add(a.function, a.gpu);
  instance_gpus_[a.instance].push_back(a.gpu);
}

void PartnerWorkersAffinity::OnRemoved(const Allocation& a) {
  gpus_.Remove(a.function, a.gpu);
  auto it = instance_gpus_.find(a.instance);
  if (it == instance_gpus_.end())
    return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), a.gpu), v.end());
  if (v.empty())
    instance_gpus_.erase(it);
}

void PartnerWorkersAffinity::Candidates(const InstanceDemand& demand, const ClusterState& state,
                                        std::vector<GpuId>& out) const {
  const auto* own = gpus_.Of(demand.function);
  if (own == nullptr)
    return;
  for (const auto& [gpu, count] : *own) {
    for (const Allocation& co : state.gpu(gpu).allocations) {
      if (co.function == demand.function)
        continue;
      auto it = instance_gpus_.find(co.instance);
      if (it == instance_gpus_.end() || it->second.size() < 2)
        continue;
      for (GpuId sibling : it->second) {
        if (sibling != gpu && !own->contains(sibling))
          out.push_back(sibling);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

std::unique_ptr<AffinityHook> MakeAffinityHook(AffinityKind kind) {
  switch (kind) {
    case AffinityKind::kSameFunction:
      return std::make_unique<SameFunctionAffinity>();
    case AffinityKind::kPartnerWorkers:
      return std::make_unique<PartnerWorkersAffinity>();
  }
  return std::make_unique<SameFunctionAffinity>();
}

}  // namespace sluice::core
