// PolicyParam: one `key: value` knob of a policy as written in an experiment or config file,
// kept with its line so that the policy that parses it can name the line of a bad value.
// Value type.
#ifndef SLUICE_CORE_POLICY_POLICY_PARAMS_H_
#define SLUICE_CORE_POLICY_POLICY_PARAMS_H_

#include <string>

namespace sluice::core {

struct PolicyParam {
  std::string key;
  std::string value;
  int line = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_POLICY_POLICY_PARAMS_H_
