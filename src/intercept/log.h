// Logging for libsluice_cuda.so: one line per message to stderr with a "sluice-intercept:"
// prefix, written with a single write(2) so lines from threads do not interleave. Thread-safe.
// Verbose messages appear only when SLUICE_INTERCEPT_VERBOSE is set (SetVerbose at init).
#ifndef SLUICE_INTERCEPT_LOG_H_
#define SLUICE_INTERCEPT_LOG_H_

namespace sluice::intercept {

void SetVerbose(bool verbose);
bool Verbose();
// Always written: warnings the operator must see (no real driver, server rejected us, ...).
void LogAlways(const char* format, ...) __attribute__((format(printf, 1, 2)));
// Written only in verbose mode.
void LogVerbose(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_LOG_H_
