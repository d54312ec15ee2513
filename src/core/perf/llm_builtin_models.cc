// Built-in LLM models: public model-card figures, GPU data-sheet peaks and the constants fitted by
// `sluice_sim_perf_fit` from ../shared/data/vidur-profiling-subset (copy its printed values here;
// docs/perf-model.md, "LLM serving model", records the run and the fit error).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "core/perf/llm_analytic_model.h"

namespace sluice::core {
namespace {

using common::Bytes;

struct ModelCard {
  const char* name;
  const char* vidur_name;
  int layers;
  LlmArchitecture arch;
  double params;  // parameter count
  int max_context_tokens;
  int default_tp;
};

// Hugging Face config.json of meta-llama/Llama-2-7b-hf, Llama-2-70b-hf, Meta-Llama-3-8B.
constexpr std::array<ModelCard, 3> kCards = {{
    {"llama2-7b", "Llama-2-7b-hf", 32, {4096, 32, 128, 32000}, 6.74e9, 4096, 1},
    {"llama2-70b", "Llama-2-70b-hf", 80, {8192, 8, 128, 32000}, 68.98e9, 4096, 4},
    {"llama3-8b", "Meta-Llama-3-8B", 32, {4096, 8, 128, 128256}, 8.03e9, 8192, 1},
}};

struct LinearFit {
  const char* vidur_name;
  const char* sku;
  int tp;
  LlmLinearParams params;
};

// {t0_s, c_s, p} per layer, fitted by sluice_sim_perf_fit ("LLM token-linear fits").
constexpr LinearFit kLinearFits[] = {
    {"Llama-2-7b-hf", "a100", 1, {0.000284991, 2.01229e-06, 1.6251}},
    {"Llama-2-7b-hf", "a100", 2, {0.000158626, 9.977e-07, 1.3257}},
    {"Llama-2-7b-hf", "a100", 4, {9.25148e-05, 5.00068e-07, 1.1312}},
    {"Llama-2-7b-hf", "a100", 8, {6.49064e-05, 2.86347e-07, 1.1109}},
    {"Llama-2-70b-hf", "a100", 1, {0.00104566, 7.7321e-06, 1.3412}},
    {"Llama-2-70b-hf", "a100", 2, {0.000538544, 3.95658e-06, 1.3482}},
    {"Llama-2-70b-hf", "a100", 4, {0.000303064, 2.0462e-06, 1.4446}},
    {"Llama-2-70b-hf", "a100", 8, {0.000171103, 1.06977e-06, 1.3267}},
    {"Meta-Llama-3-8B", "a100", 1, {0.000293153, 2.11314e-06, 1.3460}},
    {"Meta-Llama-3-8B", "a100", 2, {0.000180186, 1.09898e-06, 1.4818}},
    {"Meta-Llama-3-8B", "a100", 4, {0.00010343, 5.69999e-07, 1.2700}},
    {"Meta-Llama-3-8B", "a100", 8, {7.33506e-05, 3.15824e-07, 1.3161}},
    {"Llama-2-7b-hf", "h100", 1, {0.000174008, 6.30399e-07, 1.2739}},
    {"Llama-2-7b-hf", "h100", 2, {9.46604e-05, 3.24547e-07, 1.0903}},
    {"Llama-2-7b-hf", "h100", 4, {6.17201e-05, 1.86576e-07, 1.0767}},
    {"Llama-2-7b-hf", "h100", 8, {4.72096e-05, 1.15107e-07, 1.0685}},
    {"Llama-2-70b-hf", "h100", 1, {0.000586361, 2.76725e-06, 1.7256}},
    {"Llama-2-70b-hf", "h100", 2, {0.000296445, 1.33423e-06, 1.3366}},
    {"Llama-2-70b-hf", "h100", 4, {0.000168705, 6.73867e-07, 1.2346}},
    {"Llama-2-70b-hf", "h100", 8, {9.80895e-05, 3.54858e-07, 1.0296}},
};

struct AllReduceFit {
  const char* sku;
  int tp;
  AllReduceParams params;
};

// {latency_s, bytes_per_s}, fitted by sluice_sim_perf_fit ("LLM all-reduce fits").
constexpr AllReduceFit kAllReduceFits[] = {
    {"a100", 2, {3.58406e-05, 158.423e9}}, {"a100", 4, {2.8737e-05, 102.621e9}},
    {"a100", 8, {3.89765e-05, 86.8261e9}}, {"h100", 2, {1.662e-05, 282.104e9}},
    {"h100", 4, {3.06128e-05, 253.034e9}}, {"h100", 8, {2.85846e-05, 193.653e9}},
};

// Not calibrated by the data (no attention.csv, no end-to-end timings): chosen so that llama2-7b
// on A100 decodes one token at batch 1 in ~13 ms, as vLLM does (docs/perf-model.md).
constexpr double kIterationOverheadS = 0.003;
// 80 GB cards with vLLM's default gpu_memory_utilization of 0.9; per-GPU activation reserve.
constexpr double kUsableGpuGiB = 80.0 * 0.9;
constexpr double kActivationReserveGiBPerGpu = 1.0;

LlmGpuParams GpuParams(const std::string& sku) {
  if (sku == "h100")  // H100 SXM: 3.35 TB/s HBM3, 989 TFLOPS dense bf16
    return {"h100", 3.35e12, 989e12, 0.4, 0.6, 0.6};
  return {"a100", 2.039e12, 312e12, 0.5, 0.6, 0.6};  // A100 80GB SXM (A800: same chip)
}

const ModelCard* FindCard(const std::string& name) {
  for (const ModelCard& c : kCards) {
    if (name == c.name)
      return &c;
  }
  return nullptr;
}

absl::StatusOr<std::string> Sku(absl::string_view gpu) {
  std::string g = absl::AsciiStrToLower(gpu);
  if (g == "a100" || g == "a800")
    return std::string("a100");
  if (g == "h100")
    return g;
  return absl::NotFoundError(
      absl::StrCat("gpu: unknown LLM GPU '", gpu, "' (known: a100, a800, h100)"));
}

// llama3-8b was profiled on A100 only: its H100 curve is its A100 curve times llama2-7b's
// H100/A100 ratio (t0 and c separately), both models being 32-layer, 4096-wide.
absl::StatusOr<LlmLinearParams> LinearFor(const ModelCard& card, const std::string& sku, int tp) {
  absl::StatusOr<LlmLinearParams> own = ShippedLinearParams(card.vidur_name, sku, tp);
  if (own.ok() || std::string(card.name) != "llama3-8b")
    return own;
  SLUICE_ASSIGN_OR_RETURN(LlmLinearParams l3, ShippedLinearParams(card.vidur_name, "a100", tp));
  SLUICE_ASSIGN_OR_RETURN(LlmLinearParams l2a, ShippedLinearParams("Llama-2-7b-hf", "a100", tp));
  SLUICE_ASSIGN_OR_RETURN(LlmLinearParams l2h, ShippedLinearParams("Llama-2-7b-hf", "h100", tp));
  return LlmLinearParams{l3.t0_s * l2h.t0_s / l2a.t0_s, l3.c_s * l2h.c_s / l2a.c_s, l3.p};
}

LlmModelSpec SpecFor(const ModelCard& card, const std::string& sku, int tp) {
  const LlmArchitecture& a = card.arch;
  LlmModelSpec s;
  s.name = card.name;
  s.gpu = sku;
  s.num_layers = card.layers;
  s.tp = tp;
  s.param_bytes = Bytes(static_cast<int64_t>(card.params * 2));
  s.kv_bytes_per_token = Bytes(int64_t{2} * card.layers * a.kv_heads * a.head_dim * 2);
  s.gpu_memory = Bytes::GiB(kUsableGpuGiB);
  s.activation_reserve = Bytes::GiB(kActivationReserveGiBPerGpu * tp);
  s.max_context_tokens = card.max_context_tokens;
  return s;
}

}  // namespace

absl::StatusOr<LlmLinearParams> ShippedLinearParams(absl::string_view vidur_model,
                                                    absl::string_view sku, int tp) {
  for (const LinearFit& f : kLinearFits) {
    if (vidur_model == f.vidur_name && sku == f.sku && tp == f.tp)
      return f.params;
  }
  return absl::NotFoundError(
      absl::StrCat("no token-linear fit for ", vidur_model, " on ", sku, " at tp ", tp));
}

absl::StatusOr<AllReduceParams> ShippedAllReduceParams(absl::string_view sku, int tp) {
  for (const AllReduceFit& f : kAllReduceFits) {
    if (sku == f.sku && tp == f.tp)
      return f.params;
  }
  return absl::NotFoundError(absl::StrCat("no all-reduce fit for ", sku, " at tp ", tp));
}

absl::StatusOr<LlmAnalyticParams> BuiltinLlmParams(absl::string_view name, absl::string_view gpu,
                                                   int tp) {
  const ModelCard* card = FindCard(absl::AsciiStrToLower(name));
  if (card == nullptr) {
    return absl::NotFoundError(absl::StrCat("model: unknown LLM '", name, "' (known: ",
                                            absl::StrJoin(BuiltinLlmModelNames(), ", "), ")"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::string sku, Sku(gpu));
  if (tp == 0)
    tp = card->default_tp;
  if (tp != 1 && tp != 2 && tp != 4 && tp != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("tp: ", tp, " is not a profiled tensor-parallel degree (1, 2, 4, 8)"));
  }
  LlmAnalyticParams p;
  p.spec = SpecFor(*card, sku, tp);
  if (p.spec.KvCapacityTokens() < p.spec.max_context_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tp: ", card->name, " does not fit ", tp, " x ", kUsableGpuGiB, " GiB with room for one ",
        p.spec.max_context_tokens, "-token context (parameters ", p.spec.param_bytes.gib(),
        " GiB); use a larger tp"));
  }
  p.arch = card->arch;
  p.gpu = GpuParams(sku);
  SLUICE_ASSIGN_OR_RETURN(p.linear, LinearFor(*card, sku, tp));
  if (tp > 1) {
    SLUICE_ASSIGN_OR_RETURN(p.all_reduce, ShippedAllReduceParams(sku, tp));
  }
  p.iteration_overhead_s = kIterationOverheadS;
  return p;
}

std::vector<std::string> BuiltinLlmModelNames() {
  std::vector<std::string> out;
  for (const ModelCard& c : kCards)
    out.push_back(c.name);
  return out;
}

}  // namespace sluice::core
