// stderr logging without stdio locks or allocation: format into a stack buffer, one write(2).
#include "intercept/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace sluice::intercept {
namespace {

std::atomic<bool> g_verbose{false};

void Emit(const char* format, va_list args) {
  char buf[640];
  int n = std::snprintf(buf, sizeof(buf), "sluice-intercept[%d]: ", static_cast<int>(getpid()));
  if (n < 0)
    return;
  const int m = std::vsnprintf(buf + n, sizeof(buf) - static_cast<size_t>(n) - 1, format, args);
  if (m > 0)
    n += m;
  if (n > static_cast<int>(sizeof(buf)) - 2)
    n = static_cast<int>(sizeof(buf)) - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(2, buf, static_cast<size_t>(n));
  (void)ignored;
}

}  // namespace

void SetVerbose(bool verbose) {
  g_verbose.store(verbose, std::memory_order_relaxed);
}
bool Verbose() {
  return g_verbose.load(std::memory_order_relaxed);
}

void LogAlways(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Emit(format, args);
  va_end(args);
}

void LogVerbose(const char* format, ...) {
  if (!Verbose())
    return;
  va_list args;
  va_start(args, format);
  Emit(format, args);
  va_end(args);
}

}  // namespace sluice::intercept
