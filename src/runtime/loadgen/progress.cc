// Formatting of the `sluice load` live line.
#include "runtime/loadgen/progress.h"

#include "absl/strings/str_format.h"

namespace sluice::runtime {

std::string FormatLoadProgress(const LoadProgress& p) {
  const std::string p99 =
      p.p99.has_value() ? absl::StrFormat("%.1f ms", absl::ToDoubleMilliseconds(*p.p99)) : "-";
  return absl::StrFormat("load %s: %.1f/%.1f s  sent %d  ok %d  errors %d  p99 %s", p.function,
                         absl::ToDoubleSeconds(p.elapsed), absl::ToDoubleSeconds(p.duration),
                         p.sent, p.ok, p.errors, p99);
}

}  // namespace sluice::runtime
