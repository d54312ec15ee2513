// Prometheus text exposition format 0.0.4 helpers: name validation, escaping and number
// formatting. Used by the metrics registry (registry.cc) when rendering `/metrics`.
// Thread safety: all functions are pure and may be called from any thread.
#ifndef SLUICE_RUNTIME_METRICS_EXPOSITION_H_
#define SLUICE_RUNTIME_METRICS_EXPOSITION_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sluice::runtime {

// OK iff `name` matches `[a-zA-Z_:][a-zA-Z0-9_:]*`; otherwise InvalidArgument naming it.
[[nodiscard]] absl::Status ValidateMetricName(absl::string_view name);

// OK iff `name` matches `[a-zA-Z_][a-zA-Z0-9_]*` and does not start with the reserved `__`;
// otherwise InvalidArgument naming it.
[[nodiscard]] absl::Status ValidateLabelName(absl::string_view name);

// Escapes `\`, `"` and newline as `\\`, `\"` and `\n` (label values).
std::string EscapeLabelValue(absl::string_view value);

// Escapes `\` and newline as `\\` and `\n` (HELP text).
std::string EscapeHelp(absl::string_view help);

// Shortest decimal form that parses back to exactly `value`; `+Inf`, `-Inf`, `NaN` otherwise.
std::string FormatDouble(double value);

// Decimal form of an integer count.
std::string FormatCount(uint64_t value);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_METRICS_EXPOSITION_H_
