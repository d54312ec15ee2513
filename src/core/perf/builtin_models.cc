// Fitted constants: regenerate with `build-*/src/sim/perf_fit/sluice_sim_perf_fit` and copy the
// printed values here; docs/perf-model.md records the run. Model sizes are public parameter counts
// times bytes per parameter (fp32 for the CNNs/encoders/GPT-2 as Dilu serves them, fp16 for LLMs).
#include "core/perf/builtin_models.h"

#include <memory>

#include "common/status.h"

namespace sluice::core {
namespace {

// {t0_s, t1_s, gamma, s0, beta, alpha, p}; see SpatialParams. Fitted to Dilu's bs_sm tables.
constexpr SpatialParams kResnet152 = {0.019624, 0.000799807, 0.84904, 0.133732,
                                      0.439877, 0.886541,    5.37641};
constexpr SpatialParams kBertBase = {0.00963508, 0.00621957, 0.987949, 0.0921657,
                                     0.163615,   0.619712,   15.2733};
constexpr SpatialParams kRobertaLarge = {0.0159477, 0.0044949, 0.609818, 0.166587,
                                         0.712783,  0.885917,  7.44196};
constexpr SpatialParams kGpt2Large = {0.0227563, 0.00635949, 0.431732, 0.119545,
                                      1.02161,   0.740554,   3.5394};
constexpr SpatialParams kLlama2_7b = {0.0181529, 0.00952851, 0.252748, 0.259239,
                                      0.136484,  1.17234,    1.70037};
// vgg19 has no Dilu table: fitted on the gpulet re-implementation's vgg19 rows (its own GPU),
// then moved to Dilu's GPU with kGpuletToDiluTimeScale.
constexpr SpatialParams kVgg19Gpulet = {0.000671069, 0.000448339, 0.868695, 0.727755,
                                        0.180241,    1.11791,     1.11474};
// {omega, delta, eta, r}; see QuotaParams. Global: fitted on all 69 RaPP models, used for models
// RaPP did not profile. resnet152 and vgg19: fitted on their own RaPP rows with delta = 1, so the
// window scales with the model's own latency on Dilu's GPU.
constexpr QuotaParams kQuotaGlobal = {10.2468, 1.54847, 1.19252, 1.21128};
constexpr QuotaParams kQuotaResnet152 = {1.48732, 1.0, 1.05857, 1.52112};
constexpr QuotaParams kQuotaVgg19 = {0.0452797, 1.0, 2.36235, 5.28721};
// Vidur A100 Llama-2-7b token-linear operators, 32 layers (attention not included).
constexpr double kLlama2PrefillPerTokenS = 6.41229e-05;
// chatglm3-6b / llama2-7b parameter counts (6.24e9 / 6.74e9): decode is weight-bandwidth bound.
constexpr double kChatglmOverLlama = 6.24 / 6.74;

AnalyticParams Params(const SpatialParams& sp, int training_batch,
                      const QuotaParams& quota = kQuotaGlobal, double prefill = 0) {
  return AnalyticParams{.spatial = sp,
                        .quota = quota,
                        .prefill_per_token_s = prefill,
                        .training_batch = training_batch};
}

ModelInfo Info(const char* name, FunctionKind kind, double param_mib, double gpu_gib, int tb) {
  return ModelInfo{name, kind, Bytes::MiB(param_mib), Bytes::GiB(gpu_gib), tb};
}

}  // namespace

const double kGpuletToDiluTimeScale = 1.51698;
const double PerfModel::kDefaultInterferenceKappa = 0.580862;

std::vector<BuiltInModel> BuiltInModels() {
  const FunctionKind inf = FunctionKind::kInference, llm = FunctionKind::kLlmInference;
  AnalyticParams llama = Params(kLlama2_7b, 8, kQuotaGlobal, kLlama2PrefillPerTokenS);
  return {
      // Parameter counts: resnet152 60.2 M, vgg19 143.7 M (fp32).
      {Info("resnet152", inf, 230, 2.0, 32), Params(kResnet152, 32, kQuotaResnet152)},
      {Info("vgg19", inf, 548, 2.5, 32),
       ScaledInTime(Params(kVgg19Gpulet, 32, kQuotaVgg19), kGpuletToDiluTimeScale)},
      {Info("bert-base", inf, 420, 1.5, 32), Params(kBertBase, 32)},           // 110 M, fp32
      {Info("roberta-large", inf, 1354, 3.0, 32), Params(kRobertaLarge, 32)},  // 355 M, fp32
      {Info("gpt2-large", inf, 2953, 5.0, 32), Params(kGpt2Large, 32)},        // 774 M, fp32
      {Info("llama2-7b", llm, 12855, 20.0, 8), llama},                         // 6.74 B, fp16
      {Info("chatglm3-6b", llm, 11902, 18.0, 8), ScaledInTime(llama, kChatglmOverLlama)},
  };
}

std::unique_ptr<PerfModel> PerfModel::BuiltIn() {
  auto pm = std::make_unique<PerfModel>();
  for (BuiltInModel& m : BuiltInModels()) {
    auto latency = std::make_unique<AnalyticLatencyModel>(m.params);
    // The catalogue is constant and valid by construction; Add cannot fail on it.
    absl::Status s = pm->Add(std::move(m.info), std::move(latency));
    SLUICE_CHECK_MSG(s.ok(), s.message());
  }
  return pm;
}

}  // namespace sluice::core
