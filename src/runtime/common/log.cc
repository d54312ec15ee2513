// Daemon log lines (log.h).
#include "runtime/common/log.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sluice::runtime {
namespace {

LogLevel Threshold() {
  static const LogLevel level = [] {
    const char* v = std::getenv("SLUICE_LOG_LEVEL");
    if (v == nullptr)
      return LogLevel::kInfo;
    if (std::strcmp(v, "error") == 0)
      return LogLevel::kError;
    if (std::strcmp(v, "warning") == 0)
      return LogLevel::kWarning;
    return LogLevel::kInfo;
  }();
  return level;
}

char LevelChar(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}

}  // namespace

std::string FormatLogLine(LogLevel level, absl::string_view component, absl::string_view text,
                          int64_t unix_millis) {
  const absl::Time t = absl::FromUnixMillis(unix_millis);
  return absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone()), " ",
                      std::string(1, LevelChar(level)), " ", component, ": ", text);
}

void LogLine(LogLevel level, absl::string_view component, absl::string_view text) {
  if (static_cast<int>(level) < static_cast<int>(Threshold()))
    return;
  std::string line = FormatLogLine(level, component, text, absl::ToUnixMillis(absl::Now()));
  line.push_back('\n');
  // One write(2) per line: short lines are atomic with respect to other writers of the fd.
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n <= 0)
      return;  // stderr closed or full: logging must never fail the daemon
    done += static_cast<size_t>(n);
  }
}

}  // namespace sluice::runtime
