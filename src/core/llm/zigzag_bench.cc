// PlanZigzag solve time for the paper's sizes: Llama2-7B (32 layers) with 8, 12 and 16 batches
// queued during the load, and Llama2-70B (80 layers) with 12. The load takes 6 layer computations
// per layer (the paper's Figure 12 setting) and the first layer is loaded. The time limit is
// raised so the bench measures the solve, not the limit; the `optimal` counter says whether
// GLPK proved optimality.
#include <benchmark/benchmark.h>

#include "core/llm/zigzag.h"

namespace sluice::core::llm {
namespace {

void BM_PlanZigzag(benchmark::State& state) {
  ZigzagInput in;
  in.num_layers = static_cast<int>(state.range(0));
  for (int i = 0; i < state.range(1); ++i)
    in.weight.push_back(1.0 + 0.25 * (i % 4));  // uneven prefill batches
  in.layer_load_time = 6;
  in.layers_loaded = 1;
  in.time_limit_ms = static_cast<double>(state.range(2));
  double optimal = 0, gain = 0, gap = 0, ilp = 0;
  for (auto _ : state) {
    auto plan = PlanZigzag(in);
    benchmark::DoNotOptimize(plan);
    optimal = plan->optimal ? 1 : 0;
    gap = plan->gap;
    ilp = plan->method.rfind("ilp", 0) == 0 ? 1 : 0;
    gain = PlanBestEffort(in)->mean_latency / plan->mean_latency;
  }
  state.counters["optimal"] = optimal;
  state.counters["be_over_zigzag"] = gain;
  state.counters["gap"] = gap;
  state.counters["ilp_plan"] = ilp;
}
BENCHMARK(BM_PlanZigzag)
    ->Args({32, 8, 10000})
    ->Args({32, 12, 10000})
    ->Args({32, 16, 10000})
    ->Args({80, 12, 10000})
    ->Args({32, 16, 40})
    ->Args({80, 12, 40})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice::core::llm
