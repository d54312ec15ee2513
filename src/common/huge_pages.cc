// Re-execution with glibc's huge-page tunable (huge_pages.h).
#include "common/huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sluice::common {

std::optional<std::string> HugePageTunables(const char* tunables, const char* opt_out,
                                            std::string_view thp_enabled) {
  const std::string_view current = tunables == nullptr ? "" : tunables;
  if (current.find("glibc.malloc.hugetlb") != std::string_view::npos)
    return std::nullopt;
  if (opt_out != nullptr && std::string_view(opt_out) == "0")
    return std::nullopt;
  // The kernel marks the active mode with brackets: "always [madvise] never".
  if (thp_enabled.find("[always]") == std::string_view::npos &&
      thp_enabled.find("[madvise]") == std::string_view::npos) {
    return std::nullopt;
  }
  std::string out(current);
  if (!out.empty())
    out += ':';
  out += "glibc.malloc.hugetlb=1";
  return out;
}

void ReexecWithHugePages(char** argv) {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::stringstream thp;
  thp << f.rdbuf();
  const std::optional<std::string> value =
      HugePageTunables(std::getenv("GLIBC_TUNABLES"), std::getenv("SLUICE_HUGE_PAGES"), thp.str());
  if (!value || argv == nullptr || argv[0] == nullptr)
    return;
  if (setenv("GLIBC_TUNABLES", value->c_str(), 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc, say): go on with small pages, without the tunable.
}

}  // namespace sluice::common
