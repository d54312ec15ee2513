// Locating Sluice's own programs (program_path.h).
#include "runtime/common/program_path.h"

#include <unistd.h>

#include <cstdlib>

namespace sluice::runtime {

std::string ExecutableDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return ".";
  const std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string FindProgramPath(const std::string& option, const char* env_var,
                            const std::vector<std::string>& fallbacks) {
  if (!option.empty())
    return option;
  if (const char* v = std::getenv(env_var); v != nullptr && *v != '\0')
    return v;
  for (const std::string& f : fallbacks) {
    if (access(f.c_str(), F_OK) == 0)
      return f;
  }
  return "";
}

}  // namespace sluice::runtime
