// The registry map. It lives in a function-local static created on first use (no static
// initialisers run at load time); the built-ins are inserted then.
#include "core/registry/policy_registry.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/registry/builtin_policies.h"

namespace sluice::core {
namespace {

using Registry = std::map<std::string, PolicyFactory, std::less<>>;

Registry& GetRegistry() {
  static Registry* registry = new Registry{
      {"exclusive", MakeExclusivePolicySet},
      {"mps-l", MakeMpsLimitPolicySet},
      {"mps-r", MakeMpsRequestPolicySet},
  };
  return *registry;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakePolicySet(std::string_view name,
                                                         std::span<const PolicyParam> params,
                                                         const std::string& file) {
  const Registry& registry = GetRegistry();
  auto it = registry.find(name);
  if (it == registry.end()) {
    return common::InputError(
        {file, 0}, "policy",
        absl::StrCat("unknown policy '", absl::string_view(name.data(), name.size()),
                     "'; known: ", absl::StrJoin(KnownPolicies(), ", ")));
  }
  return it->second(params, file);
}

std::vector<std::string> KnownPolicies() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : GetRegistry())
    names.push_back(name);
  return names;
}

void RegisterPolicy(std::string name, PolicyFactory factory) {
  GetRegistry()[std::move(name)] = std::move(factory);
}

}  // namespace sluice::core
