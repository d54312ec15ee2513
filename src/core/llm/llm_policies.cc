// The LLM policy sets by name. Each set is a few switches over one default; the ablations of
// Fig. 17 add BlitzScale's techniques one at a time (docs/blitzscale.md).
#include "core/llm/llm_policies.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "core/registry/param_reader.h"

namespace sluice::core::llm {
namespace {

using blitz::HostCachePolicy;

struct Builtin {
  const char* name;
  std::function<void(LlmPolicySet&)> apply;
};

void Blitz(LlmPolicySet& s) {
  s.source = LoadSource::kNetworkMulticast;
  s.host_cache = HostCachePolicy::kOneCopy;
}

const std::vector<Builtin>& Builtins() {
  static const auto* const kBuiltins = new std::vector<Builtin>{
      {"serverless-llm", [](LlmPolicySet& s) { s.host_cache = HostCachePolicy::kKeepAlive; }},
      {"allcache", [](LlmPolicySet& s) { s.host_cache = HostCachePolicy::kAllCache; }},
      {"distserve-full",
       [](LlmPolicySet& s) {
         s.autoscale = false;
         s.host_cache = HostCachePolicy::kNone;
       }},
      {"distserve-half",
       [](LlmPolicySet& s) {
         s.autoscale = false;
         s.fixed_gpu_fraction = 0.5;
         s.host_cache = HostCachePolicy::kNone;
       }},
      {"blitzscale",
       [](LlmPolicySet& s) {
         Blitz(s);
         s.live = LiveMode::kZigzag;
         s.mutation = true;
       }},
      // +Network: multicast over the compute network with a plan blind to serving traffic (no
      // interference pruning, one chain), stop-the-world.
      {"blitzscale-network",
       [](LlmPolicySet& s) {
         Blitz(s);
         s.plan.prune_interference = false;
         s.plan.multi_chain = false;
       }},
      // +Interference-free plan: Algorithm 1 in full, still stop-the-world.
      {"blitzscale-interference-free", [](LlmPolicySet& s) { Blitz(s); }},
      // +Live with best effort instead of zigzag (mutation kept: it is part of live scaling).
      {"blitzscale-live",
       [](LlmPolicySet& s) {
         Blitz(s);
         s.live = LiveMode::kBestEffort;
         s.mutation = true;
       }},
  };
  return *kBuiltins;
}

const PolicyParam* FindParam(const std::vector<PolicyParam>& params, absl::string_view key) {
  for (const PolicyParam& p : params) {
    if (p.key == key)
      return &p;
  }
  return nullptr;
}

absl::Status ReadScaler(ParamReader& r, LlmScalerConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(c.window, r.Seconds("window_s", c.window, 1e-3, 1e6));
  SLUICE_ASSIGN_OR_RETURN(c.scale_down_timeout,
                          r.Seconds("scale_down_timeout_s", c.scale_down_timeout, 0, 1e7));
  SLUICE_ASSIGN_OR_RETURN(c.kv_usage_upper, r.Double("kv_usage_upper", c.kv_usage_upper, 1e-3, 1));
  SLUICE_ASSIGN_OR_RETURN(c.lower_fraction,
                          r.Double("lower_fraction", c.lower_fraction, 1e-3, 0.999));
  SLUICE_ASSIGN_OR_RETURN(c.prefill_tokens_per_s_per_instance,
                          r.Double("prefill_tokens_per_s_per_instance", 0, 0, 1e12));
  SLUICE_ASSIGN_OR_RETURN(c.decode_tokens_per_s_per_instance,
                          r.Double("decode_tokens_per_s_per_instance", 0, 0, 1e12));
  constexpr int64_t kMax = 1 << 20;
  SLUICE_ASSIGN_OR_RETURN(c.min_prefill, r.Int("min_prefill", c.min_prefill, 0, kMax));
  SLUICE_ASSIGN_OR_RETURN(c.max_prefill, r.Int("max_prefill", c.max_prefill, 1, kMax));
  SLUICE_ASSIGN_OR_RETURN(c.min_decode, r.Int("min_decode", c.min_decode, 0, kMax));
  SLUICE_ASSIGN_OR_RETURN(c.max_decode, r.Int("max_decode", c.max_decode, 1, kMax));
  return absl::OkStatus();
}

// min <= max, reported at the max_* param's line (or the min_* one when max is the default).
absl::Status CheckBounds(const std::vector<PolicyParam>& params, const std::string& file,
                         absl::string_view set, absl::string_view pool, int min, int max) {
  if (min <= max)
    return absl::OkStatus();
  const std::string max_key = absl::StrCat("max_", pool);
  const std::string min_key = absl::StrCat("min_", pool);
  const PolicyParam* p = FindParam(params, max_key);
  if (p == nullptr)
    p = FindParam(params, min_key);
  return common::InputError({file, p == nullptr ? 0 : p->line}, p == nullptr ? max_key : p->key,
                            absl::StrCat("policy '", set, "': ", min_key, " (", min,
                                         ") exceeds ", max_key, " (", max, ")"));
}

absl::Status ReadSetSpecific(ParamReader& r, LlmPolicySet& s) {
  if (s.host_cache == HostCachePolicy::kKeepAlive) {
    SLUICE_ASSIGN_OR_RETURN(s.keep_alive, r.Seconds("keep_alive_s", s.keep_alive, 0, 1e7));
  }
  if (!s.autoscale) {
    SLUICE_ASSIGN_OR_RETURN(s.fixed_gpu_fraction,
                            r.Double("fixed_gpu_fraction", s.fixed_gpu_fraction, 1e-3, 1));
  }
  if (s.live == LiveMode::kZigzag) {
    SLUICE_ASSIGN_OR_RETURN(s.zigzag_time_limit_ms,
                            r.Double("zigzag_time_limit_ms", s.zigzag_time_limit_ms, 1e-3, 1e6));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> LlmPolicySetNames() {
  std::vector<std::string> names;
  for (const Builtin& b : Builtins())
    names.emplace_back(b.name);
  return names;
}

absl::StatusOr<LlmPolicySet> MakeLlmPolicySet(absl::string_view name,
                                              const std::vector<PolicyParam>& params,
                                              const std::string& file) {
  const auto& builtins = Builtins();
  const auto it = std::find_if(builtins.begin(), builtins.end(),
                               [&](const Builtin& b) { return name == b.name; });
  if (it == builtins.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.empty() ? "" : absl::StrCat(file, ": "), "unknown LLM policy set '",
                     name, "'; known: ", absl::StrJoin(LlmPolicySetNames(), ", ")));
  }
  LlmPolicySet s;
  s.name = std::string(name);
  it->apply(s);
  ParamReader r(name, params, file);
  SLUICE_RETURN_IF_ERROR(ReadScaler(r, s.scaler));
  SLUICE_RETURN_IF_ERROR(ReadSetSpecific(r, s));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  SLUICE_RETURN_IF_ERROR(
      CheckBounds(params, file, name, "prefill", s.scaler.min_prefill, s.scaler.max_prefill));
  SLUICE_RETURN_IF_ERROR(
      CheckBounds(params, file, name, "decode", s.scaler.min_decode, s.scaler.max_decode));
  s.scaler.allow_mutation = s.mutation;
  return s;
}

}  // namespace sluice::core::llm
