// The sluice policy set: Sluice's params are read here, the rest are Dilu's (validated by
// MakeDiluComponents); the parts' factories then cannot fail.
#include "core/registry/sluice_policies.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/status.h"
#include "core/dilu/dilu_policy.h"
#include "core/longtail/parked_packing.h"
#include "core/longtail/tail_scaler.h"
#include "core/registry/composed_policy_set.h"

namespace sluice::core {
namespace {

const std::set<std::string, std::less<>>& SluiceKeys() {
  static const auto* keys = new std::set<std::string, std::less<>>{
      "park_after_s",   "keep_alive_s",   "slow_keep_alive_s", "cold_slo_fraction",
      "prewarm",        "histogram_bin_s", "histogram_bins",   "min_instances",
      "memory_packing", "prestarted_pool", "wake_from_zero",   "unpark_ms"};
  return *keys;
}

struct SluiceKnobs {
  TailScalerConfig tail;
  double cold_slo_fraction = 0.8;
  bool memory_packing = true;
  StartTraits start;
};

absl::StatusOr<SluiceKnobs> ReadKnobs(std::span<const PolicyParam> params,
                                      const std::string& file, absl::Duration period) {
  ParamReader r("sluice", params, file);
  SluiceKnobs k;
  TailScalerConfig& t = k.tail;
  SLUICE_ASSIGN_OR_RETURN(t.park_after, r.Seconds("park_after_s", t.park_after, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(t.keep_alive, r.Seconds("keep_alive_s", t.keep_alive, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(t.slow_keep_alive,
                          r.Seconds("slow_keep_alive_s", t.slow_keep_alive, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(k.cold_slo_fraction, r.Double("cold_slo_fraction", 0.8, 1e-6, 10));
  SLUICE_ASSIGN_OR_RETURN(t.prewarm, r.Bool("prewarm", true));
  SLUICE_ASSIGN_OR_RETURN(t.histogram.bin_width,
                          r.Seconds("histogram_bin_s", t.histogram.bin_width, 1e-3, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t bins, r.Int("histogram_bins", 240, 1, 1 << 20));
  t.histogram.bins = static_cast<int>(bins);
  SLUICE_ASSIGN_OR_RETURN(const int64_t min, r.Int("min_instances", 0, 0, 1 << 20));
  t.lazy.min_instances = static_cast<int>(min);
  SLUICE_ASSIGN_OR_RETURN(k.memory_packing, r.Bool("memory_packing", true));
  SLUICE_ASSIGN_OR_RETURN(k.start.prestarted_pool, r.Bool("prestarted_pool", true));
  SLUICE_ASSIGN_OR_RETURN(k.start.wake_from_zero, r.Bool("wake_from_zero", true));
  SLUICE_ASSIGN_OR_RETURN(const double unpark_ms,
                          r.Double("unpark_ms", absl::ToDoubleMilliseconds(period), 0, 1e9));
  k.start.unpark = absl::Milliseconds(unpark_ms);
  SLUICE_RETURN_IF_ERROR(r.Finish());
  return k;
}

// Whether a cold start from the host cache (+ one batch-1 execution at the request share)
// fits `fraction` of the SLO.
bool CachedStartFits(const FunctionTraits& f, double fraction) {
  absl::Duration total = f.cached_start;
  if (f.latency != nullptr && f.profiled.request > 0)
    total += f.latency->BatchLatency(1, f.profiled.request, f.profiled.time_quota);
  return total <= f.slo * fraction;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeSluicePolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file) {
  std::vector<PolicyParam> own, dilu_params;
  for (const PolicyParam& p : params)
    (SluiceKeys().contains(p.key) ? own : dilu_params).push_back(p);
  SLUICE_ASSIGN_OR_RETURN(DiluComponents dilu, MakeDiluComponents(dilu_params, file));
  SLUICE_ASSIGN_OR_RETURN(SluiceKnobs knobs, ReadKnobs(own, file, dilu.config().vertical.period));
  const auto shared = std::make_shared<const DiluComponents>(std::move(dilu));
  PolicyParts parts;
  parts.name = "sluice";
  if (knobs.memory_packing) {
    parts.placement = std::make_unique<ParkedPacking>(shared->MakeScheduler());
  } else {
    parts.placement = shared->MakeScheduler();
  }
  parts.quota = [shared](const FunctionTraits& f) { return shared->QuotaFor(f.profiled); };
  parts.scaler = [shared, knobs](const FunctionTraits& f) -> std::unique_ptr<HorizontalScaler> {
    TailScalerConfig c = knobs.tail;
    const LazyScalerConfig& base = shared->config().scaler;
    const int policy_min = c.lazy.min_instances;
    c.lazy = base;
    c.lazy.capacity_rps = f.capacity_rps > 0 ? f.capacity_rps : 0;
    c.lazy.min_instances = std::max(policy_min, f.min_instances);
    c.lazy.max_instances =
        std::max(c.lazy.min_instances, std::min(base.max_instances, f.max_instances));
    c.cached_start_fits_slo = CachedStartFits(f, knobs.cold_slo_fraction);
    absl::StatusOr<std::unique_ptr<TailScaler>> s = TailScaler::Create(c);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  };
  parts.controller = [shared](GpuId) { return shared->MakeController(); };
  parts.work_conserving = shared->work_conserving();
  parts.start = knobs.start;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace sluice::core
