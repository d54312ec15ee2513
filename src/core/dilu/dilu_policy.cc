// DiluConfig parsing (one table row per key) and the component factory.
#include "core/dilu/dilu_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"

namespace sluice::core {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::Status Real(const std::string& v, double lo, bool lo_open, double hi, double& out) {
  double x = 0;
  if (!absl::SimpleAtod(v, &x) || !std::isfinite(x)) {
    return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not a number"));
  }
  if ((lo_open ? !(x > lo) : !(x >= lo)) || !(x <= hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be in ", lo_open ? "(" : "[", lo, ", ", hi, "], got ", v));
  }
  out = x;
  return absl::OkStatus();
}

absl::Status Whole(const std::string& v, int lo, int hi, int& out) {
  int x = 0;
  if (!absl::SimpleAtoi(v, &x)) {
    return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not an integer"));
  }
  if (x < lo || x > hi) {
    return absl::InvalidArgumentError(absl::StrCat("must be in [", lo, ", ", hi, "], got ", v));
  }
  out = x;
  return absl::OkStatus();
}

absl::Status Flag(const std::string& v, bool& out) {
  const std::string s = absl::AsciiStrToLower(v);
  if (s == "true" || s == "yes" || s == "on" || s == "1") {
    out = true;
  } else if (s == "false" || s == "no" || s == "off" || s == "0") {
    out = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not a boolean"));
  }
  return absl::OkStatus();
}

absl::Status Duration(const std::string& v, absl::Duration unit, absl::Duration& out) {
  double x = 0;
  SLUICE_RETURN_IF_ERROR(Real(v, 0, true, kInf, x));
  out = x * unit;
  return absl::OkStatus();
}

absl::Status Affinity(const std::string& v, AffinityKind& out) {
  if (v == "same_function") {
    out = AffinityKind::kSameFunction;
  } else if (v == "partner_workers") {
    out = AffinityKind::kPartnerWorkers;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("'", v, "' is not one of same_function, partner_workers"));
  }
  return absl::OkStatus();
}

using Setter = absl::Status (*)(const std::string& v, DiluConfig& c);
constexpr int kMaxInt = std::numeric_limits<int>::max();

// One row per key: the setter parses `v` into its field of `c`.
// clang-format off
#define SLUICE_DILU_KEY(name, expr) \
  { name, [](const std::string& v, DiluConfig& c) { return expr; } }
const std::pair<const char*, Setter> kKeys[] = {
    SLUICE_DILU_KEY("alpha", Real(v, 0, false, kInf, c.scheduler.alpha)),
    SLUICE_DILU_KEY("beta", Real(v, 0, false, kInf, c.scheduler.beta)),
    SLUICE_DILU_KEY("omega", Real(v, 0, true, kInf, c.scheduler.omega)),
    SLUICE_DILU_KEY("gamma", Real(v, 0, true, kInf, c.scheduler.gamma)),
    SLUICE_DILU_KEY("node_candidates", Whole(v, 1, kMaxInt, c.scheduler.node_candidates)),
    SLUICE_DILU_KEY("affinity", Affinity(v, c.scheduler.affinity)),
    SLUICE_DILU_KEY("resource_complementarity", Flag(v, c.scheduler.resource_complementarity)),
    SLUICE_DILU_KEY("workload_affinity", Flag(v, c.scheduler.workload_affinity)),
    SLUICE_DILU_KEY("vertical_scaling", Flag(v, c.vertical_scaling)),
    SLUICE_DILU_KEY("period_ms", Duration(v, absl::Milliseconds(1), c.vertical.period)),
    SLUICE_DILU_KEY("eta_violation", Real(v, 0, true, kInf, c.vertical.eta_violation)),
    SLUICE_DILU_KEY("eta_violation_llm", Real(v, 0, true, kInf, c.vertical.eta_violation_llm)),
    SLUICE_DILU_KEY("eta_increase", Real(v, 1, false, kInf, c.vertical.eta_increase)),
    SLUICE_DILU_KEY("eta_recover", Real(v, 0, false, kInf, c.vertical.eta_recover)),
    SLUICE_DILU_KEY("recovery_every", Whole(v, 1, kMaxInt, c.vertical.recovery_every)),
    SLUICE_DILU_KEY("rate_window", Whole(v, 1, 1 << 16, c.vertical.rate_window)),
    SLUICE_DILU_KEY("min_klc_periods", Whole(v, 1, kMaxInt, c.vertical.min_klc_periods)),
    SLUICE_DILU_KEY("klc_span_periods", Whole(v, 1, 1 << 16, c.vertical.klc_span_periods)),
    SLUICE_DILU_KEY("klc_min_window", Whole(v, 0, kMaxInt, c.vertical.klc_min_window)),
    SLUICE_DILU_KEY("token_floor", Real(v, 0, true, 1, c.vertical.token_floor)),
    SLUICE_DILU_KEY("work_conserving", Flag(v, c.vertical.work_conserving)),
    SLUICE_DILU_KEY("window_s", Duration(v, absl::Seconds(1), c.scaler.window)),
    SLUICE_DILU_KEY("phi_out", Whole(v, 1, kMaxInt, c.scaler.phi_out)),
    SLUICE_DILU_KEY("phi_in", Whole(v, 0, kMaxInt, c.scaler.phi_in)),
    SLUICE_DILU_KEY("min_instances", Whole(v, 0, kMaxInt, c.scaler.min_instances)),
    SLUICE_DILU_KEY("max_instances", Whole(v, 0, kMaxInt, c.scaler.max_instances)),
    SLUICE_DILU_KEY("reset_window", Flag(v, c.scaler.reset_window_on_scale)),
    SLUICE_DILU_KEY("p_request", Real(v, 0, true, 1, c.profiler.request_fraction)),
    SLUICE_DILU_KEY("p_limit", Real(v, 0, true, 1, c.profiler.limit_fraction)),
    SLUICE_DILU_KEY("tolerance", Real(v, 0, false, 0.5, c.profiler.tolerance)),
    SLUICE_DILU_KEY("sm_unit", Real(v, 0, true, 1, c.profiler.sm_unit)),
    SLUICE_DILU_KEY("sm_step", Real(v, 0, true, 1, c.profiler.sm_step)),
    SLUICE_DILU_KEY("max_batch", Whole(v, 1, 1 << 16, c.profiler.max_batch)),
    SLUICE_DILU_KEY("slo_fraction", Real(v, 0, true, 1, c.profiler.slo_fraction)),
    SLUICE_DILU_KEY("limit_factor", Real(v, 1, false, kInf, c.profiler.limit_factor)),
    SLUICE_DILU_KEY("te_tolerance", Real(v, 0, false, 0.99, c.profiler.te_tolerance)),
};
#undef SLUICE_DILU_KEY
// clang-format on

Setter Find(const std::string& key) {
  for (const auto& [name, setter] : kKeys) {
    if (key == name)
      return setter;
  }
  return nullptr;
}

std::string KnownKeys() {
  std::vector<std::string> names;
  for (const auto& [name, setter] : kKeys)
    names.push_back(name);
  std::sort(names.begin(), names.end());
  return absl::StrJoin(names, ", ");
}

// Pairs of keys whose values must agree; reported at the line of whichever key was given last.
absl::Status CrossCheck(const DiluConfig& c, const absl::flat_hash_map<std::string, int>& lines,
                        const std::string& file) {
  auto fail = [&](const char* a, const char* b, absl::string_view msg) {
    const int la = lines.contains(a) ? lines.at(a) : 0;
    const int lb = lines.contains(b) ? lines.at(b) : 0;
    return common::InputError({file, std::max(la, lb)}, la >= lb ? a : b, msg);
  };
  const SchedulerConfig& s = c.scheduler;
  if (s.gamma < s.omega)
    return fail("omega", "gamma", "gamma must be >= omega");
  if (!(s.alpha + s.beta > 0))
    return fail("alpha", "beta", "alpha + beta must be > 0");
  if (c.scaler.max_instances < c.scaler.min_instances) {
    return fail("min_instances", "max_instances", "max_instances must be >= min_instances");
  }
  if (c.profiler.request_fraction > c.profiler.limit_fraction) {
    return fail("p_request", "p_limit", "p_request must be <= p_limit");
  }
  if (c.profiler.sm_unit > c.profiler.sm_step) {
    return fail("sm_unit", "sm_step", "sm_unit must be <= sm_step");
  }
  const double eta = std::min(c.vertical.eta_violation, c.vertical.eta_violation_llm);
  if (c.vertical.eta_recover > eta) {
    return fail("eta_violation_llm", "eta_recover",
                "eta_recover must be <= eta_violation and eta_violation_llm");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DiluConfig> ParseDiluConfig(std::span<const PolicyParam> params,
                                           const std::string& file) {
  DiluConfig config;
  absl::flat_hash_map<std::string, int> lines;
  for (const PolicyParam& p : params) {
    const Setter set = Find(p.key);
    if (set == nullptr) {
      return common::InputError({file, p.line}, p.key,
                                absl::StrCat("unknown Dilu parameter; known: ", KnownKeys()));
    }
    if (!lines.emplace(p.key, p.line).second) {
      return common::InputError({file, p.line}, p.key, "given twice");
    }
    const absl::Status st = set(p.value, config);
    if (!st.ok())
      return common::InputError({file, p.line}, p.key, st.message());
  }
  SLUICE_RETURN_IF_ERROR(CrossCheck(config, lines, file));
  return config;
}

absl::StatusOr<DiluComponents> DiluComponents::Create(const DiluConfig& config) {
  SLUICE_RETURN_IF_ERROR(DiluScheduler::Create(config.scheduler).status());
  SLUICE_RETURN_IF_ERROR(DiluVerticalController::Create(config.vertical).status());
  SLUICE_RETURN_IF_ERROR(LazyScaler::Create(config.scaler).status());
  SLUICE_RETURN_IF_ERROR(Profiler::Create(config.profiler).status());
  return DiluComponents(config);
}

std::unique_ptr<DiluScheduler> DiluComponents::MakeScheduler() const {
  auto s = DiluScheduler::Create(config_.scheduler);
  SLUICE_CHECK(s.ok());  // validated in Create
  return std::move(*s);
}

std::unique_ptr<HorizontalScaler> DiluComponents::MakeScaler(double capacity_rps, int function_min,
                                                             int function_max) const {
  LazyScalerConfig c = config_.scaler;
  c.capacity_rps = capacity_rps > 0 ? capacity_rps : 0;
  c.min_instances = std::max(c.min_instances, function_min);
  c.max_instances = std::max(c.min_instances, std::min(c.max_instances, function_max));
  auto s = LazyScaler::Create(c);
  SLUICE_CHECK(s.ok());
  return std::move(*s);
}

std::unique_ptr<VerticalController> DiluComponents::MakeController() const {
  if (!config_.vertical_scaling) {
    return std::make_unique<StaticRequestController>(config_.vertical.period,
                                                     config_.vertical.token_floor);
  }
  auto c = DiluVerticalController::Create(config_.vertical);
  SLUICE_CHECK(c.ok());
  return std::move(*c);
}

absl::StatusOr<DiluComponents> MakeDiluComponents(std::span<const PolicyParam> params,
                                                  const std::string& file) {
  SLUICE_ASSIGN_OR_RETURN(DiluConfig config, ParseDiluConfig(params, file));
  return DiluComponents::Create(config);
}

}  // namespace sluice::core
