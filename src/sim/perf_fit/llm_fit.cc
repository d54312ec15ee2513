// Prints the LLM constants in the form llm_builtin_models.cc ships them, with fit errors.
#include "sim/perf_fit/llm_fit.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/perf/llm_perf_fit.h"
#include "core/perf/llm_perf_model.h"
#include "sim/workload/file_io.h"

namespace sluice::sim {
namespace {

constexpr const char* kModels[] = {"Llama-2-7b-hf", "Llama-2-70b-hf", "Meta-Llama-3-8B"};
constexpr const char* kSkus[] = {"a100", "h100"};

std::string Err(const core::FitError& e) {
  return absl::StrCat("MAPE ", absl::SixDigits(e.mape), "%  max ", absl::SixDigits(e.max_ape),
                      "%  (n=", e.points, ")");
}

bool Exists(const std::string& path) {
  return std::filesystem::exists(path) || std::filesystem::exists(path + ".xz");
}

absl::Status FitLinearOne(const std::string& path, const char* model, const char* sku) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFileMaybeXz(path));
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::VidurLayerTime> rows,
                          core::ParseVidurMlp(text, path));
  for (int tp : {1, 2, 4, 8}) {
    std::vector<core::VidurLayerTime> at = core::VidurRowsAtTp(rows, tp);
    if (at.empty())
      continue;
    SLUICE_ASSIGN_OR_RETURN(core::LlmLinearFit fit, core::FitLlmLinear(at));
    std::printf("    {\"%s\", \"%s\", %d, {%.6g, %.6g, %.5g}},\n", model, sku, tp,
                fit.params.t0_s, fit.params.c_s, fit.params.p);
    std::printf("      // fit: %s", Err(fit.error).c_str());
    absl::StatusOr<core::LlmLinearParams> shipped = core::ShippedLinearParams(model, sku, tp);
    if (shipped.ok())
      std::printf(";  shipped: %s", Err(core::MeasureLlmLinear(*shipped, at)).c_str());
    std::printf("\n");
  }
  return absl::OkStatus();
}

absl::Status FitAllReduceOne(const std::string& path, const char* sku) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFileMaybeXz(path));
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::VidurAllReduceTime> rows,
                          core::ParseVidurAllReduce(text, path));
  for (int tp : {2, 4, 8}) {
    SLUICE_ASSIGN_OR_RETURN(core::AllReduceFit fit, core::FitAllReduce(rows, tp));
    std::printf("    {\"%s\", %d, {%.6g, %.6ge9}},  // fit: %s", sku, tp, fit.params.latency_s,
                fit.params.bytes_per_s / 1e9, Err(fit.error).c_str());
    absl::StatusOr<core::AllReduceParams> shipped = core::ShippedAllReduceParams(sku, tp);
    if (shipped.ok())
      std::printf(";  shipped: %s", Err(core::MeasureAllReduce(*shipped, rows, tp)).c_str());
    std::printf("\n");
  }
  return absl::OkStatus();
}

// Dilu's only LLM table (llama2-7b, GPU and stack undocumented; latency per decode step by
// inspection) against the model's A100 decode step with 512-token contexts, full GPU rows only.
absl::Status CrossCheckDilu(const std::string& data_dir) {
  std::string path = absl::StrCat(data_dir, "/dilu-artifacts/profiles_bs_sm/bs_sm_llama2.csv");
  if (!Exists(path)) {
    std::printf("== LLM vs Dilu: skipped, %s is absent\n", path.c_str());
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFileMaybeXz(path));
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::ProfilePoint> rows,
                          core::ParseDiluProfile(text, path, "llama2-7b"));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::LlmPerfModel> m,
                          core::BuiltinLlmModel("llama2-7b", "a100", 1));
  std::printf("== LLM vs Dilu bs_sm_llama2 (100%% SM), decode step, ours: A100, 512-token "
              "contexts\n   batch  dilu_ms  ours_ms  dilu/dilu(1)  ours/ours(1)\n");
  double dilu1 = 0, ours1 = absl::ToDoubleMilliseconds(m->DecodeTime(1, 512));
  for (const core::ProfilePoint& p : rows) {
    if (p.sm_share < 0.999)
      continue;
    double ours = absl::ToDoubleMilliseconds(m->DecodeTime(p.batch, int64_t{p.batch} * 512));
    if (p.batch == 1)
      dilu1 = p.latency_s * 1e3;
    std::printf("   %5d  %7.2f  %7.2f  %12.3f  %12.3f\n", p.batch, p.latency_s * 1e3, ours,
                dilu1 > 0 ? p.latency_s * 1e3 / dilu1 : 0.0, ours / ours1);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FitLlmTables(const std::string& data_dir) {
  const std::string root = absl::StrCat(data_dir, "/vidur-profiling-subset");
  if (!std::filesystem::exists(root)) {
    std::printf("== LLM fits: skipped, %s is absent\n", root.c_str());
    return absl::OkStatus();
  }
  std::printf("== LLM token-linear fits (per layer t(n) = (t0^p + (c n)^p)^(1/p), Vidur mlp.csv "
              "op medians without emb)\n   constants as in llm_builtin_models.cc: "
              "{model, sku, tp, {t0_s, c_s, p}}\n");
  for (const char* sku : kSkus) {
    for (const char* model : kModels) {
      std::string path = absl::StrCat(root, "/compute/", sku, "/meta-llama/", model, "/mlp.csv");
      if (!Exists(path)) {
        std::printf("    // %s on %s: not profiled\n", model, sku);
        continue;
      }
      SLUICE_RETURN_IF_ERROR(FitLinearOne(path, model, sku));
    }
  }
  std::printf("== LLM all-reduce fits (latency_s + bytes / bytes_per_s, intra-node rows)\n");
  for (const char* sku : kSkus) {
    std::string path = absl::StrCat(root, "/network/", sku, "_dgx/all_reduce.csv");
    if (!Exists(path)) {
      std::printf("    // %s all-reduce: absent\n", sku);
      continue;
    }
    SLUICE_RETURN_IF_ERROR(FitAllReduceOne(path, sku));
  }
  return CrossCheckDilu(data_dir);
}

}  // namespace sluice::sim
