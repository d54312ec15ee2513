// The `profiler:` block and each function's `quota:`: explicit quotas as given, the others from
// Dilu's multi-factor profiler run against the performance model (function_profile.h).
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/experiment/loader_internal.h"
#include "sim/experiment/yaml_fields.h"

namespace sluice::sim::internal {
namespace {

using core::FunctionKind;

// A number in [0, 1).
absl::StatusOr<double> BelowOne(const StrictMap& m, absl::string_view key, double fallback) {
  SLUICE_ASSIGN_OR_RETURN(double v, m.Double(key, Range::kNonNegative, fallback));
  if (v >= 1)
    return m.ErrorAt(key, absl::StrCat("must be < 1, got ", v));
  return v;
}

absl::StatusOr<core::ProfilerConfig> ReadProfilerConfig(const StrictMap& m) {
  core::ProfilerConfig c;
  SLUICE_ASSIGN_OR_RETURN(c.request_fraction,
                          m.Double("request_p", Range::kFraction, c.request_fraction));
  SLUICE_ASSIGN_OR_RETURN(c.limit_fraction,
                          m.Double("limit_p", Range::kFraction, c.limit_fraction));
  if (c.request_fraction > c.limit_fraction) {
    return m.ErrorAt("request_p", absl::StrCat("request_p (", c.request_fraction, ") > limit_p (",
                                               c.limit_fraction, ")"));
  }
  SLUICE_ASSIGN_OR_RETURN(c.tolerance, BelowOne(m, "tolerance", c.tolerance));
  SLUICE_ASSIGN_OR_RETURN(c.sm_unit, m.Double("sm_unit", Range::kFraction, c.sm_unit));
  SLUICE_ASSIGN_OR_RETURN(c.sm_step, m.Double("sm_step", Range::kFraction, c.sm_step));
  if (c.sm_unit > c.sm_step) {
    return m.ErrorAt("sm_unit",
                     absl::StrCat("sm_unit (", c.sm_unit, ") > sm_step (", c.sm_step, ")"));
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t batch, m.Int("max_batch", Range::kPositive, c.max_batch));
  if (batch > 4096)
    return m.ErrorAt("max_batch", "must be <= 4096");
  c.max_batch = static_cast<int>(batch);
  SLUICE_ASSIGN_OR_RETURN(c.slo_fraction,
                          m.Double("slo_fraction", Range::kFraction, c.slo_fraction));
  SLUICE_ASSIGN_OR_RETURN(c.limit_factor,
                          m.Double("limit_factor", Range::kPositive, c.limit_factor));
  if (c.limit_factor < 1)
    return m.ErrorAt("limit_factor", "must be >= 1");
  SLUICE_ASSIGN_OR_RETURN(c.te_tolerance, BelowOne(m, "te_tolerance", c.te_tolerance));
  return c;
}

// True when the function sets `batching.max_batch` itself (the section was parsed already).
bool HasExplicitBatch(const StrictMap& f) {
  if (!f.Has("batching"))
    return false;
  absl::StatusOr<StrictMap> b = StrictMap::Create(
      f.Get("batching"), f.file(), f.FieldOf("batching"), {"max_batch", "max_queue_delay_ms"});
  return b.ok() && b->Has("max_batch");
}

}  // namespace

absl::Status ParseExplicitQuota(const StrictMap& f, FunctionConfig& fc) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap m,
                          StrictMap::Create(f.Get("quota"), f.file(), f.FieldOf("quota"),
                                            {"request", "limit", "time_quota"}));
  SLUICE_ASSIGN_OR_RETURN(fc.quota.request, m.Double("request", Range::kFraction, std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(fc.quota.limit, m.Double("limit", Range::kFraction, std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(fc.quota.time_quota, m.Double("time_quota", Range::kFraction, 1.0));
  if (fc.quota.request > fc.quota.limit) {
    return m.ErrorAt(
        "request", absl::StrCat("request (", fc.quota.request, ") > limit (", fc.quota.limit, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<core::Profiler> ParseProfiler(const StrictMap& top) {
  core::ProfilerConfig config;
  if (top.Has("profiler")) {
    SLUICE_ASSIGN_OR_RETURN(
        StrictMap m,
        StrictMap::Create(top.Get("profiler"), top.file(), top.FieldOf("profiler"),
                          {"request_p", "limit_p", "tolerance", "sm_unit", "sm_step", "max_batch",
                           "slo_fraction", "limit_factor", "te_tolerance"}));
    SLUICE_ASSIGN_OR_RETURN(config, ReadProfilerConfig(m));
  }
  absl::StatusOr<core::Profiler> profiler = core::Profiler::Create(config);
  if (!profiler.ok())
    return top.ErrorAt("profiler", profiler.status().message());
  return profiler;
}

absl::StatusOr<std::optional<FunctionProfile>> ResolveQuota(const StrictMap& f,
                                                            const core::ModelEntry& model,
                                                            const LoadContext& ctx,
                                                            FunctionConfig& fc) {
  if (f.Has("quota") && !f.Get("quota").IsScalar()) {
    SLUICE_RETURN_IF_ERROR(ParseExplicitQuota(f, fc));
    return std::nullopt;
  }
  if (f.Has("quota")) {
    SLUICE_ASSIGN_OR_RETURN(std::string how, f.String("quota", std::nullopt));
    if (how != "profile") {
      return f.ErrorAt(
          "quota",
          absl::StrCat("must be {request: R, limit: L[, time_quota: Q]} or 'profile', got '", how,
                       "'"));
    }
  }
  const bool training = fc.kind == FunctionKind::kTraining;
  ProfileTarget target;
  target.kind = fc.kind;
  target.slo = fc.slo;
  target.prompt_tokens = fc.default_prompt_tokens;
  target.output_tokens = fc.default_output_tokens;
  const bool exponential = fc.exponential_service_mean.has_value();
  if (!training && (exponential || HasExplicitBatch(f)))
    target.fixed_batch = fc.max_batch;
  absl::StatusOr<FunctionProfile> p = ProfileFunction(ctx.profiler, model, target);
  if (!p.ok()) {
    return f.ErrorAt(training ? "model" : "slo_ms",
                     absl::StrCat("Dilu's profiler found no quota for model '", model.info.name,
                                  "': ", p.status().message(),
                                  training ? "" : "; loosen slo_ms or give quota:"));
  }
  fc.quota = p->quota;
  if (training)
    return *std::move(p);
  fc.max_batch = p->batch;
  // An exponential service time is not the perf model's: the engine derives 1 / mean.
  if (!f.Has("capacity_rps") && !exponential)
    fc.capacity_rps = p->capacity_rps;
  return *std::move(p);
}

}  // namespace sluice::sim::internal
