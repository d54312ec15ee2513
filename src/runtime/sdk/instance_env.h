// Where an instance process serves, from the environment the node agent gives it
// (docs/platform.md "Environment of an instance process"). Shared by FunctionOptions::FromEnv and
// TrainingOptions::FromEnv. Thread-safe (reads the environment).
#ifndef SLUICE_RUNTIME_SDK_INSTANCE_ENV_H_
#define SLUICE_RUNTIME_SDK_INSTANCE_ENV_H_

#include <string>

#include "absl/status/statusor.h"

namespace sluice::runtime {

struct InstanceAddress {
  std::string name;  // $SLUICE_FUNCTION, else the caller's default
  std::string host = "127.0.0.1";  // $SLUICE_HOST when set
  int port = 0;                    // $PORT, required: 0 (ephemeral) .. 65535
};

// InvalidArgument "environment PORT: ..." when PORT is unset or not a port number.
absl::StatusOr<InstanceAddress> ReadInstanceAddress(const std::string& default_name);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_INSTANCE_ENV_H_
