// The profiler over the built-in performance-model catalogue: every model gets a feasible,
// valid quota; the Hybrid Growth Search needs far fewer trials than the traversal and lands
// within 5 % of its throughput efficacy. Prints the per-model trial counts (the catalogue's
// constants belong to core/perf and may be refitted, so counts are not pinned here).
#include "core/dilu/perf_trial_runner.h"

#include <cstdio>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

double Te(const Profile& p) {
  return p.batch / (absl::ToDoubleSeconds(p.latency) * p.quota.request);
}

TEST(PerfTrialRunnerTest, ProfilesEveryCatalogueModel) {
  const auto perf = PerfModel::BuiltIn();
  const Profiler profiler = *Profiler::Create({});
  const absl::Duration slo = absl::Milliseconds(100);
  for (const std::string& name : perf->names()) {
    const ModelEntry* m = *perf->Find(name);
    auto hgs = ProfileModel(profiler, *m, m->info.kind, slo);
    PerfModelTrialRunner runner(*m);
    auto trav = profiler.TraverseInference(runner, slo);
    ASSERT_TRUE(hgs.ok() && trav.ok()) << name << ": " << hgs.status() << " " << trav.status();
    EXPECT_TRUE(ValidateQuota(hgs->quota).ok()) << name;
    EXPECT_LE(hgs->latency, slo / 2) << name;
    EXPECT_DOUBLE_EQ(hgs->quota.limit, std::min(1.0, 2 * hgs->quota.request)) << name;
    EXPECT_EQ(hgs->memory, m->info.gpu_memory) << name;
    EXPECT_LT(hgs->trials, trav->trials) << name;
    EXPECT_GE(Te(*hgs), 0.95 * Te(*trav)) << name;
    std::printf(
        "%-14s inference SLO 100 ms: HGS %2d trials -> IBS %2d SMR %.2f TE %.0f | "
        "traversal %d -> IBS %2d SMR %.2f TE %.0f\n",
        name.c_str(), hgs->trials, hgs->batch, hgs->quota.request, Te(*hgs), trav->trials,
        trav->batch, trav->quota.request, Te(*trav));
  }
}

TEST(PerfTrialRunnerTest, TrainingQuotasMeetTheirThroughputTargets) {
  const auto perf = PerfModel::BuiltIn();
  const Profiler profiler = *Profiler::Create({});
  for (const char* name : {"resnet152", "bert-base", "roberta-large", "gpt2-large"}) {
    const ModelEntry* m = *perf->Find(name);
    auto p = ProfileModel(profiler, *m, FunctionKind::kTraining, absl::ZeroDuration());
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    ASSERT_TRUE(ValidateQuota(p->quota).ok()) << name;
    const double t1 = p->throughput;
    const auto thr = [&](double s) {
      return m->info.training_batch / absl::ToDoubleSeconds(m->latency->IterationTime(s));
    };
    // Within +-2 % of the target, or the grid point just above it.
    const double req = thr(p->quota.request), lim = thr(p->quota.limit);
    EXPECT_TRUE(std::abs(req - 0.8 * t1) <= 0.016 * t1 || req >= 0.8 * t1) << name;
    EXPECT_GE(lim, 0.98 * t1) << name;
    EXPECT_LE(p->trials, 15) << name;
    std::printf("%-14s training: %2d trials -> request %.2f (%.1f %% of T1), limit %.2f\n", name,
                p->trials, p->quota.request, 100 * req / t1, p->quota.limit);
  }
}

}  // namespace
}  // namespace sluice::core
