// infless+, infless-l and infless-r: one factory, differing in the share basis and in whether
// the `share` key is accepted.
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/baselines/histogram_scaler.h"
#include "core/baselines/static_share_controller.h"
#include "core/baselines/static_share_placement.h"
#include "core/registry/baseline_policies.h"
#include "core/registry/composed_policy_set.h"

namespace sluice::core {
namespace {

// Reads the histogram knobs into `c`.
absl::Status ReadHistogram(ParamReader& r, IdleHistogramConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(c.bin_width, r.Seconds("bin_s", c.bin_width, 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t bins, r.Int("bins", c.bins, 1, 1 << 20));
  c.bins = static_cast<int>(bins);
  SLUICE_ASSIGN_OR_RETURN(c.prewarm_percentile,
                          r.Double("prewarm_percentile", c.prewarm_percentile, 0, 100));
  SLUICE_ASSIGN_OR_RETURN(c.keep_alive_percentile,
                          r.Double("keep_alive_percentile", c.keep_alive_percentile, 0, 100));
  SLUICE_ASSIGN_OR_RETURN(c.margin, r.Double("margin", c.margin, 0, 1 - 1e-9));
  SLUICE_ASSIGN_OR_RETURN(c.cv_threshold, r.Double("cv_threshold", c.cv_threshold, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min_obs,
                          r.Int("min_observations", c.min_observations, 1, 1 << 30));
  c.min_observations = static_cast<int>(min_obs);
  return absl::OkStatus();
}

// Reads the scaler's knobs (histogram included) into `sc`.
absl::Status ReadScaler(ParamReader& r, HistogramScalerConfig& sc) {
  SLUICE_RETURN_IF_ERROR(ReadHistogram(r, sc.histogram));
  SLUICE_ASSIGN_OR_RETURN(
      sc.fallback_keep_alive,
      r.Seconds("fallback_keep_alive_s", sc.histogram.bin_width * sc.histogram.bins, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(sc.prewarm_lead, r.Seconds("prewarm_lead_s", sc.prewarm_lead, 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(sc.queue_drain, r.Seconds("queue_drain_s", sc.queue_drain, 1e-6, 1e9));
  return absl::OkStatus();
}

// A HistogramScaler factory over a validated config.
std::function<std::unique_ptr<HorizontalScaler>(const FunctionTraits&)> HistogramFactory(
    const HistogramScalerConfig& sc) {
  return [sc](const FunctionTraits& f) -> std::unique_ptr<HorizontalScaler> {
    HistogramScalerConfig cfg = sc;
    std::tie(cfg.min_instances, cfg.max_instances) = ScalerBounds(f);
    cfg.capacity_rps = f.capacity_rps;
    absl::StatusOr<std::unique_ptr<HistogramScaler>> s = HistogramScaler::Create(cfg);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  };
}

// `fixed`: the variant's share basis; nullopt reads it from the `share` key.
absl::StatusOr<std::unique_ptr<PolicySet>> MakeInfless(
    std::string name, std::optional<ShareBasis> fixed, std::span<const PolicyParam> params,
    const std::string& file, const HistogramScalerConfig& defaults = {}) {
  ParamReader r(name, params, file);
  ShareBasis basis = fixed.value_or(ShareBasis::kLimit);
  if (!fixed.has_value()) {
    SLUICE_ASSIGN_OR_RETURN(const std::string share,
                            r.Choice("share", "limit", {"limit", "request"}));
    basis = share == "limit" ? ShareBasis::kLimit : ShareBasis::kRequest;
  }
  HistogramScalerConfig sc = defaults;
  SLUICE_RETURN_IF_ERROR(ReadScaler(r, sc));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  if (sc.histogram.prewarm_percentile > sc.histogram.keep_alive_percentile) {
    return ComboError(params, file, name, {"keep_alive_percentile", "prewarm_percentile"},
                      absl::StrCat("prewarm_percentile (", sc.histogram.prewarm_percentile,
                                   ") must not exceed keep_alive_percentile (",
                                   sc.histogram.keep_alive_percentile, ")"));
  }

  PolicyParts parts;
  parts.name = name;
  parts.placement =
      std::make_unique<StaticSharePlacement>(StaticSharePlacement::Options{name, basis, order});
  parts.quota = [basis](const FunctionTraits& f) {
    const double share = basis == ShareBasis::kLimit ? f.profiled.limit : f.profiled.request;
    return SmQuota{share, share};
  };
  parts.scaler = HistogramFactory(sc);
  parts.controller = [](GpuId) {
    return std::make_unique<StaticShareController>();
  };
  parts.work_conserving = false;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessPolicySet(std::span<const PolicyParam> params,
                                                                const std::string& file) {
  return MakeInfless("infless+", std::nullopt, params, file);
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessLimitPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  return MakeInfless("infless-l", ShareBasis::kLimit, params, file);
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessRequestPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  return MakeInfless("infless-r", ShareBasis::kRequest, params, file);
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeInflessPaperPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  // INFless's LSTH builds on the hybrid histogram of "Serverless in the Wild" (ATC'20) with its
  // published settings: 1-minute bins over a 4-hour range (the other defaults are already
  // ATC'20's: 5th / 99th percentiles, 10 % margin, CV threshold 2).
  HistogramScalerConfig paper;
  paper.histogram.bin_width = absl::Minutes(1);
  paper.histogram.bins = 240;
  return MakeInfless("infless", ShareBasis::kLimit, params, file, paper);
}

}  // namespace sluice::core
