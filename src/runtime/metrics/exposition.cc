// Prometheus text format helpers; see exposition.h.
#include "runtime/metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace sluice::runtime {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

absl::Status ValidateMetricName(absl::string_view name) {
  bool ok = !name.empty();
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsDigit(c));
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid metric name '", name, "': must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
}

absl::Status ValidateLabelName(absl::string_view name) {
  bool ok = !name.empty();
  for (size_t i = 0; ok && i < name.size(); ++i) {
    const char c = name[i];
    ok = IsAsciiLetter(c) || c == '_' || (i > 0 && IsDigit(c));
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid label name '", name, "': must match [a-zA-Z_][a-zA-Z0-9_]*"));
  }
  if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid label name '", name, "': names starting with __ are reserved"));
  }
  return absl::OkStatus();
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatDouble(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
  if (r.ec != std::errc()) return absl::StrCat(value);  // Unreachable: 64 bytes always suffice.
  return std::string(buf, r.ptr);
}

std::string FormatCount(uint64_t value) { return absl::StrCat(value); }

}  // namespace sluice::runtime
