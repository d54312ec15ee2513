// The registry map. It lives in a function-local static created on first use (no static
// initialisers run at load time; C++ makes that first use thread-safe); the built-ins are
// inserted then.
#include "core/registry/policy_registry.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/registry/baseline_policies.h"
#include "core/registry/builtin_policies.h"
#include "core/registry/dilu_policy_set.h"
#include "core/registry/hasgpu_policies.h"
#include "core/registry/longtail_policies.h"
#include "core/registry/pipeline_baseline_policies.h"
#include "core/registry/quart_policies.h"
#include "core/registry/sluice_policies.h"

namespace sluice::core {
namespace {

using Registry = std::map<std::string, PolicyFactory, std::less<>>;

void AddBuiltins(Registry& registry) {
  registry["exclusive"] = MakeExclusivePolicySet;
  registry["mps-l"] = MakeMpsLimitPolicySet;
  registry["mps-r"] = MakeMpsRequestPolicySet;
  registry["fast-gs+"] = MakeFastGsPolicySet;
  registry["infless+"] = MakeInflessPolicySet;
  registry["infless-l"] = MakeInflessLimitPolicySet;
  registry["infless-r"] = MakeInflessRequestPolicySet;
  registry["tgs"] = MakeTgsPolicySet;
  registry["dilu"] = MakeDiluPolicySet;
  registry["kserve"] = MakeKservePolicySet;
  registry["per-request"] = MakePerRequestPolicySet;
  registry["fast-gshare"] = MakeFastGsharePolicySet;
  registry["has-gpu"] = MakeHasGpuPolicySet;
  registry["infless"] = MakeInflessPaperPolicySet;
  registry["quart"] = MakeQuartPolicySet;
  registry["inferline"] = MakeInferLinePolicySet;
  registry["cocktail"] = MakeCocktailPolicySet;
  registry["sluice"] = MakeSluicePolicySet;
}

Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    AddBuiltins(*r);
    return r;
  }();
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

void RegisterAllPolicies() {
  AddBuiltins(GetRegistry());
}

void RegisterPolicy(std::string name, PolicyFactory factory) {
  GetRegistry()[std::move(name)] = std::move(factory);
}

}  // namespace sluice::core
