// Transparent huge pages for large simulations. A 50,000-function run touches about 1 GB at random
// (scalers, instances, queues, the event heap); with 4 KiB pages most of those accesses also miss
// the TLB (docs/PERFORMANCE.md: 14 % of the run's time). glibc backs its heap with transparent
// huge pages (madvise) only when the process starts with GLIBC_TUNABLES=glibc.malloc.hugetlb=1,
// read once at start-up, so an entry point that wants them re-executes itself with the setting
// added. Used by the `sluice sim run` entry (src/cli/main.cc) and the long-tail benchmark; never by
// library code or tests (the process image is replaced). Thread-compatible; call before threads.
#ifndef SLUICE_COMMON_HUGE_PAGES_H_
#define SLUICE_COMMON_HUGE_PAGES_H_

#include <optional>
#include <string>
#include <string_view>

namespace sluice::common {

// The GLIBC_TUNABLES value to re-execute with, or nothing when the process should go on as it
// is: `tunables` (the current GLIBC_TUNABLES, null when unset) already names
// glibc.malloc.hugetlb, `opt_out` (SLUICE_HUGE_PAGES, null when unset) is "0", or `thp_enabled`
// (the contents of /sys/kernel/mm/transparent_hugepage/enabled, empty when unreadable) does not
// select "always" or "madvise". Other tunables are kept (colon-separated).
std::optional<std::string> HugePageTunables(const char* tunables, const char* opt_out,
                                            std::string_view thp_enabled);

// Re-executes /proc/self/exe with the same arguments and environment plus the tunable, when
// HugePageTunables says so. Returns only when it did not (or exec failed: the process goes on with
// small pages).
void ReexecWithHugePages(char** argv);

}  // namespace sluice::common

#endif  // SLUICE_COMMON_HUGE_PAGES_H_
