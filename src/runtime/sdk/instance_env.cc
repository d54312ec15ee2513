// The instance's address from its environment (instance_env.h).
#include "runtime/sdk/instance_env.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice::runtime {

absl::StatusOr<InstanceAddress> ReadInstanceAddress(const std::string& default_name) {
  InstanceAddress a;
  const char* name = std::getenv("SLUICE_FUNCTION");
  a.name = name != nullptr && *name != '\0' ? name : default_name;
  if (const char* host = std::getenv("SLUICE_HOST"); host != nullptr && *host != '\0') {
    a.host = host;
  }
  const char* port = std::getenv("PORT");
  if (port == nullptr || !absl::SimpleAtoi(port, &a.port) || a.port < 0 || a.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("environment PORT: must be a port number, got '",
                                                   port == nullptr ? "(unset)" : port, "'"));
  }
  return a;
}

}  // namespace sluice::runtime
