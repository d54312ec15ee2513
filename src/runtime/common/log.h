// Daemon log lines: one line per event on stderr, "2026-11-21T20:31:02.123Z I gateway: text",
// written with a single write(2) so lines from different threads never interleave. The daemons
// (controller, gateway, node agent) log state changes and failures that an operator must see;
// `sluice up` sends each daemon's stderr to <home>/logs/<daemon>.log. Thread-safe.
#ifndef SLUICE_RUNTIME_COMMON_LOG_H_
#define SLUICE_RUNTIME_COMMON_LOG_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sluice::runtime {

enum class LogLevel { kInfo, kWarning, kError };

// Writes one line; `component` names the daemon or module ("gateway", "controller", "agent").
// Lines below the level set by SLUICE_LOG_LEVEL (info|warning|error; default info) are dropped.
void LogLine(LogLevel level, absl::string_view component, absl::string_view text);

// The line LogLine writes (without its newline), for tests.
std::string FormatLogLine(LogLevel level, absl::string_view component, absl::string_view text,
                          int64_t unix_millis);

template <typename... Args>
void LogInfo(absl::string_view component, const Args&... args) {
  LogLine(LogLevel::kInfo, component, absl::StrCat(args...));
}
template <typename... Args>
void LogWarning(absl::string_view component, const Args&... args) {
  LogLine(LogLevel::kWarning, component, absl::StrCat(args...));
}
template <typename... Args>
void LogError(absl::string_view component, const Args&... args) {
  LogLine(LogLevel::kError, component, absl::StrCat(args...));
}

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_COMMON_LOG_H_
