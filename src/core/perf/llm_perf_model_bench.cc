// Cost of one LLM iteration-time evaluation, the LLM simulator's per-iteration call (a
// 1,000-GPU experiment makes millions of them; target well under 1 us).
#include <benchmark/benchmark.h>

#include "core/perf/llm_perf_model.h"

namespace sluice::core {
namespace {

void BM_LlmIterationTime(benchmark::State& state) {
  auto m = BuiltinLlmModel(state.range(0) == 4 ? "llama2-70b" : "llama2-7b");
  const LlmPerfModel& model = **m;
  int64_t prefill = 0;
  int decode = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(model.IterationTime(prefill, prefill > 0 ? 1 : 0, decode,
                                                 int64_t{decode} * 700));
    prefill = (prefill + 257) % 4096;
    decode = decode % 128 + 1;
  }
}
BENCHMARK(BM_LlmIterationTime)->Arg(1)->Arg(4);  // tp

}  // namespace
}  // namespace sluice::core
