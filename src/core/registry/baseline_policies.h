// The serverless and GPU-sharing baselines of the Dilu paper (ASPLOS'25 §5.1) as registry
// factories: "fast-gs+" (FaST-GShare extended to training), "infless+" with the placement-study
// variants "infless-l" / "infless-r", and "tgs". Factories only; policy_registry.cc registers
// them. Each PolicySet is owned by one loop (not thread-safe). Every param is optional; the
// defaults and the reasons for them are listed here and in docs/REPRODUCTION.md.
#ifndef SLUICE_CORE_REGISTRY_BASELINE_POLICIES_H_
#define SLUICE_CORE_REGISTRY_BASELINE_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

// fast-gs+: FaST-GShare's spatio-temporal sharing. Spatial share = the profiled limit (as the Dilu
// paper set it "for fairness", like MPS-l), times a temporal quota: the fraction of each
// FaST-Manager time window the instance may run. The fluid model has no time slicing, so the
// quota folds into a static, non-work-conserving effective share limit x time_quota (the engine
// offers no separate time-quota hook; time-slicing overheads are not modelled). Training jobs
// get static limit shares. Placement: best fit on that share (StaticSharePlacement, basis limit).
// Horizontal: eager ReactiveScaler: out on the first sample whose load (plus queue) exceeds the
// deployed capacity, surplus instances leave after a short keep-alive.
//   time_quota     (0, 1]  temporal quota per window                      [1: no time slicing]
//   keep_alive_s   >= 0    surplus instance lifetime after its last need  [10]
//   min_instances  >= 0    floor on warm instances (OpenFaaS's default
//                          minimum of 1 replica; FaST-GShare runs on it)  [1]
//   queue_drain_s  > 0     queued requests count as queue / drain rps     [1]
//   node_order     most_allocated | least_allocated                       [most_allocated]
absl::StatusOr<std::unique_ptr<PolicySet>> MakeFastGsPolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file);

// infless+: INFless extended to training. Static profiled shares (limit or request), request
// batching (the engine batches per FunctionConfig), best-fit packing (StaticSharePlacement), and
// HistogramScaler: reactive scale-out plus hybrid-histogram pre-warming / keep-alive per
// instance level ("Serverless in the Wild", which INFless adopts). infless-l / infless-r fix the
// share to limit / request and reject the `share` key.
//   share                   limit | request (infless+ only)                 [limit]
//   bin_s                   histogram bin width, seconds                    [1: one sample]
//   bins                    >= 1                                            [240]
//   prewarm_percentile      [0, 100]                                        [5]
//   keep_alive_percentile   [prewarm_percentile, 100]                       [99]
//   margin                  [0, 1): head x (1 - m), tail x (1 + m)          [0.1]
//   cv_threshold            bin-count CV needed to trust the histogram      [2]
//   min_observations        idle times needed to trust the histogram        [10]
//   fallback_keep_alive_s   keep-alive when not trusted                     [bins x bin_s]
//   prewarm_lead_s          reload this long before the pre-warm point      [3]
//   queue_drain_s, node_order                                               [1, most_allocated]
absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessPolicySet(std::span<const PolicyParam> params,
                                                                const std::string& file);
absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessLimitPolicySet(
    std::span<const PolicyParam> params, const std::string& file);
absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessRequestPolicySet(
    std::span<const PolicyParam> params, const std::string& file);

// infless: INFless (ASPLOS'22) with its published defaults, the name the QUART paper's
// comparison uses (§8.1): infless-l's machinery (limit shares, best fit, batching by the
// engine, HistogramScaler) with the histogram of "Serverless in the Wild" that INFless's LSTH
// builds on, at ATC'20's published 1-minute bins over 4 hours (bin_s 60, bins 240, so the
// untrusted-histogram keep-alive is 4 h). Same keys as infless-l.
absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessPaperPolicySet(
    std::span<const PolicyParam> params, const std::string& file);

// tgs: TGS priority time sharing. Quota <request, 1>: an instance may use the whole GPU in time,
// guaranteed its request; placement charges requests (StaticSharePlacement, basis request), so
// exactly the pairs an experiment co-locates share a GPU. PriorityRateController per GPU (the
// function of the SLO-sensitive, longest-resident instance is production; the placement tracks
// instance -> function for it), work-conserving; ReactiveScaler. Controllers made by a tgs set
// must not outlive it.
//   period_ms        > 0       controller period                        [5]
//   initial_rate     [floor, 1] opportunistic rate at start            [0.05]
//   floor            (0, 1]    opportunistic rate never below          [0.01]
//   increase_step    [0, 1]    additive probe per period               [0.01]
//   backoff          (0, 1)    multiplicative back-off                 [0.5]
//   tolerance        [0, 1)    production drop that counts             [0.05]
//   reference_decay  [0, 1)    production peak decay per period        [0.01]
//   keep_alive_s, queue_drain_s, node_order                            [60, 1, most_allocated]
absl::StatusOr<std::unique_ptr<PolicySet>> MakeTgsPolicySet(std::span<const PolicyParam> params,
                                                            const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_BASELINE_POLICIES_H_
