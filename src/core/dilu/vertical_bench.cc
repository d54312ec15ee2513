// DiluVerticalController cost per GPU per period with 8 co-located instances (3 SLO-sensitive,
// one of them an LLM, 5 best effort) whose kernel activity follows fixed on/off cycles of
// different lengths, so every branch and the work-conserving pass run. Target (issue 3): < 1 us.
#include <vector>

#include "benchmark/benchmark.h"

#include "core/dilu/vertical_controller.h"

namespace sluice::core {
namespace {

void BM_IssueEightInstances(benchmark::State& state) {
  auto ctl = *DiluVerticalController::Create({});
  std::vector<InstanceActivity> inst(8);
  for (int i = 0; i < 8; ++i) {
    inst[i].instance = InstanceId(i);
    inst[i].quota = {0.1 + 0.02 * i, 0.2 + 0.05 * i};
    inst[i].slo_sensitive = i < 3;
    inst[i].llm = i == 2;
  }
  std::vector<int64_t> tokens(8);
  absl::Time now = absl::UnixEpoch();
  int64_t period = 0;
  for (auto _ : state) {
    for (int i = 0; i < 8; ++i) {
      const int cycle = 7 + 3 * i;  // on for the first half of each cycle; bursts stretch it
      const int64_t phase = period % cycle;
      const bool burst = (period / 997) % 2 == 1 && i == 0;
      inst[i].blocks_launched = (phase < cycle / 2 || burst) ? 64 * (i + 1) : 0;
    }
    ctl->Issue(now, 100000, inst, tokens);
    benchmark::DoNotOptimize(tokens.data());
    now += absl::Milliseconds(5);
    ++period;
  }
}
BENCHMARK(BM_IssueEightInstances);

}  // namespace
}  // namespace sluice::core
