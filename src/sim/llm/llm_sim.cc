// RunLlmExperiment / RunLlmSimulation: the built-in perf models, core::llm's autoscaler (bounds
// filled from the perf model when the policy leaves them 0) and the live plan, around LlmEngine.
#include "sim/llm/llm_sim.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {
namespace {

// Branch-and-bound nodes per zigzag solve (core/llm's deterministic limit instead of wall time).
constexpr int kZigzagNodeLimit = 50;  // core/llm benchmarks the simulator shape at 50

class CoreScaler : public ScaleDecider {
 public:
  explicit CoreScaler(const core::llm::LlmScalerConfig& c) : scaler_(c) {}
  void Observe(const core::llm::LlmLoad& load) override { scaler_.Observe(load); }
  core::llm::LlmScaleDecision Decide(absl::Time now) override { return scaler_.Decide(now); }

 private:
  core::llm::LlmAutoscaler scaler_;
};

}  // namespace

absl::StatusOr<LlmRunResult> RunLlmSimulation(const LlmSimConfig& config,
                                              const LlmPolicyConfig& policy) {
  std::vector<std::unique_ptr<core::LlmPerfModel>> models;
  EngineDeps deps;
  for (const LlmFunctionConfig& f : config.functions) {
    absl::StatusOr<std::unique_ptr<core::LlmPerfModel>> m =
        core::BuiltinLlmModel(f.model, config.gpu, f.tp);
    if (!m.ok()) {
      return absl::Status(m.status().code(),
                          absl::StrCat(config.source_file, ": function ", f.name,
                                       ": model: ", m.status().message()));
    }
    deps.models.push_back(m->get());
    models.push_back(std::move(*m));
  }
  const core::llm::LlmPolicySet set = policy.set;
  const std::vector<const core::LlmPerfModel*> ptrs = deps.models;
  deps.make_scaler = [&config, ptrs, set](int fn, const core::llm::LlmScalerConfig& c)
      -> std::unique_ptr<ScaleDecider> {
    if (!set.autoscale) return nullptr;
    const LlmFunctionConfig& f = config.functions[fn];
    core::llm::LlmScalerConfig filled = core::llm::FillProfiledBounds(
        c, *ptrs[fn],
        {f.default_prompt_tokens, f.default_output_tokens, f.max_batch_tokens, f.max_decode_batch});
    filled.allow_mutation = set.mutation;
    return std::make_unique<CoreScaler>(filled);
  };
  if (set.live == core::llm::LiveMode::kZigzag) {
    deps.plan_live = [](core::llm::ZigzagInput in) {
      in.node_limit = kZigzagNodeLimit;  // a deterministic stop: runs must repeat bit for bit
      return core::llm::PlanZigzag(in);
    };
  }
  if (set.live == core::llm::LiveMode::kBestEffort) deps.plan_live = core::llm::PlanBestEffort;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<LlmEngine> engine,
                          LlmEngine::Create(config, policy, std::move(deps)));
  return engine->Run();
}

absl::StatusOr<std::vector<LlmRunResult>> RunLlmExperiment(const LlmSimConfig& config) {
  std::vector<LlmRunResult> out;
  for (const LlmPolicyConfig& p : config.policies) {
    SLUICE_ASSIGN_OR_RETURN(LlmRunResult r, RunLlmSimulation(config, p));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace sluice::sim::llm
