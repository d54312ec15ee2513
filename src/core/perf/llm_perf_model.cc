// LlmModelSpec's KV capacity and the BuiltinLlmModel factory (the analytic model of
// llm_analytic_model.h with the constants of llm_builtin_models.cc).
#include "core/perf/llm_perf_model.h"

#include <utility>

#include "common/status.h"
#include "core/perf/llm_analytic_model.h"

namespace sluice::core {

int64_t LlmModelSpec::KvCapacityTokens() const {
  int64_t free = tp * gpu_memory.count() - param_bytes.count() - activation_reserve.count();
  if (free <= 0 || kv_bytes_per_token.count() <= 0)
    return 0;
  return free / kv_bytes_per_token.count();
}

absl::StatusOr<std::unique_ptr<LlmPerfModel>> BuiltinLlmModel(absl::string_view name,
                                                              absl::string_view gpu, int tp) {
  SLUICE_ASSIGN_OR_RETURN(LlmAnalyticParams p, BuiltinLlmParams(name, gpu, tp));
  return std::make_unique<AnalyticLlmModel>(std::move(p));
}

}  // namespace sluice::core
