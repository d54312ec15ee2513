// Profiler: hand-worked binary search and Hybrid Growth Search runs against fake TrialRunners
// with known surfaces (arithmetic in the comments), trial counts, traversal baseline, errors.
// Dilu's own measured <IBS, SMR> tables are exercised in profiler_data_test.cc.
#include "core/dilu/profiler.h"

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

// Inference fake: t_exec(b, s) = w(b) (0.2 + 0.8 / s) ms (Amdahl: 80 % of the work scales with
// SM share), w = 10, 12, 16, 30, 70, 150 ms for IBS 1..32. Counts calls.
class AmdahlRunner : public TrialRunner {
 public:
  absl::StatusOr<TrialResult> Run(const Trial& t) override {
    ++calls;
    static const std::map<int, double> w = {{1, 10}, {2, 12},  {4, 16},
                                            {8, 30}, {16, 70}, {32, 150}};
    const double ms = w.at(t.batch) * (0.2 + 0.8 / t.sm_share);
    return TrialResult{absl::Milliseconds(ms), t.batch / (ms / 1000), Bytes::GiB(t.batch)};
  }
  int calls = 0;
};

// Training fake: throughput(s) = f(s), latency = 1 / throughput.
class CurveRunner : public TrialRunner {
 public:
  explicit CurveRunner(std::function<double(double)> f) : f_(std::move(f)) {}
  absl::StatusOr<TrialResult> Run(const Trial& t) override {
    shares.push_back(t.sm_share);
    const double thr = f_(t.sm_share);
    return TrialResult{absl::Seconds(1 / std::max(thr, 1e-9)), thr, Bytes::GiB(3)};
  }
  std::vector<double> shares;

 private:
  std::function<double(double)> f_;
};

Profiler MakeProfiler(ProfilerConfig c = {}) {
  return *Profiler::Create(c);
}

TEST(ProfilerTest, HybridGrowthSearchHandWorked) {
  // Target t_exec <= SLO / 2 = 50 ms. TE = IBS / (t_exec s) in 1/s.
  // IBS 1: s 0.1 -> 82 ms (miss), s 0.2 -> 42 ms ok, TE 1/(0.042*0.2) = 119.0      [2 trials]
  // IBS 2 from 0.2: 50.4 ms miss (TE 198.4 > bar 0.95*119.0), 0.3 -> 34.4 ms ok,
  //   TE 193.8 > 113.1: accept                                                    [4 trials]
  // IBS 4 from 0.3: 45.87 ms ok, TE 290.7 > 0.95*193.8 = 184.1: accept (best)       [5 trials]
  // IBS 8 from 0.3: 86 (TE 310.1), 66 (303.0), 54 (296.3) miss, 0.6 -> 46 ms ok,
  //   TE 289.9 > 0.95*290.7 = 276.2: accept, best stays IBS 4                       [9 trials]
  // IBS 16 from 0.6: 107.3 ms miss and TE 248.4 <= 0.95*289.9 = 275.4: stop         [10 trials]
  AmdahlRunner runner;
  auto p = MakeProfiler().ProfileInference(runner, absl::Milliseconds(100));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->quota.request, 0.3);
  EXPECT_DOUBLE_EQ(p->quota.limit, 0.6);
  EXPECT_EQ(p->batch, 4);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(p->latency), 16 * (0.2 + 0.8 / 0.3), 1e-6);
  EXPECT_NEAR(p->throughput, 4 / 0.0458666667, 1e-3);
  EXPECT_EQ(p->trials, 10);
  EXPECT_EQ(runner.calls, 10);
  EXPECT_EQ(p->memory, Bytes::GiB(16));  // largest IBS tried (the pruned IBS 16 trial)
}

TEST(ProfilerTest, StrictToleranceStopsAtTheFirstTeDrop) {
  // te_tolerance 0: IBS 8 at 0.3..0.6 as above, TE 289.9 <= 290.7: stop after 9 trials.
  ProfilerConfig c;
  c.te_tolerance = 0;
  AmdahlRunner runner;
  auto p = MakeProfiler(c).ProfileInference(runner, absl::Milliseconds(100));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->batch, 4);
  EXPECT_DOUBLE_EQ(p->quota.request, 0.3);
  EXPECT_EQ(p->trials, 9);
}

TEST(ProfilerTest, TraversalTriesAllSixtyAndAgreesOnAConvexSurface) {
  AmdahlRunner runner;
  auto t = MakeProfiler().TraverseInference(runner, absl::Milliseconds(100));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->trials, 60);
  EXPECT_EQ(t->batch, 4);
  EXPECT_DOUBLE_EQ(t->quota.request, 0.3);
}

TEST(ProfilerTest, LooseSloAndBatchCap) {
  // SLO 1 s -> 500 ms: IBS 1, 2, 4, 8 are feasible at 0.1 with TE rising (122, 203, 305, 325);
  // IBS 16 at 0.1 takes 574 ms (miss) and its TE 278.7 <= 0.95 * 325.2 = 309.0: stop. Best IBS 8
  // at 0.1 after 5 trials.
  AmdahlRunner runner;
  auto p = MakeProfiler().ProfileInference(runner, absl::Seconds(1));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->batch, 8);
  EXPECT_DOUBLE_EQ(p->quota.request, 0.1);
  EXPECT_DOUBLE_EQ(p->quota.limit, 0.2);
  EXPECT_EQ(p->trials, 5);
  ProfilerConfig capped;
  capped.max_batch = 2;  // IBS 1, 2 only
  AmdahlRunner r2;
  auto q = MakeProfiler(capped).ProfileInference(r2, absl::Seconds(1));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->batch, 2);
  EXPECT_EQ(q->trials, 2);
}

TEST(ProfilerTest, UnreachableSloIsFailedPrecondition) {
  AmdahlRunner runner;  // IBS 1 at 100 % takes 10 ms > 5 ms
  auto p = MakeProfiler().ProfileInference(runner, absl::Milliseconds(10));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(runner.calls, 10);  // grew SMR 10 % .. 100 %
  EXPECT_EQ(MakeProfiler().TraverseInference(runner, absl::Milliseconds(10)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ProfilerTest, TrainingBinarySearchHandWorked) {
  // T(s) = 110 s / (s + 0.1), T1 = T(1) = 100.
  // Request, p = 0.8, target 80 +- 1.6: mid 50 % -> 91.67 (>= target: high = 50);
  //   mid 25 % -> 78.57, |78.57 - 80| = 1.43 <= 1.6: request 0.25.
  // Limit, p = 1.0, target 100 +- 2: 50 % (cached) 91.67 < 100: low = 50; 75 % -> 97.06 < 98:
  //   low = 75; 87 % -> 98.66, within 2: limit 0.87.
  // Trials: 100, 50, 25, 75, 87 = 5.
  CurveRunner runner([](double s) { return 110 * s / (s + 0.1); });
  auto p = MakeProfiler().ProfileTraining(runner);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->quota.request, 0.25);
  EXPECT_DOUBLE_EQ(p->quota.limit, 0.87);
  EXPECT_EQ(p->trials, 5);
  EXPECT_EQ(runner.shares, (std::vector<double>{1.0, 0.5, 0.25, 0.75, 0.87}));
  EXPECT_NEAR(p->throughput, 100, 1e-9);
}

TEST(ProfilerTest, TrainingStopsWhenTheGridIsExhausted) {
  // A step curve never lands within +-0 %: the search narrows to adjacent grid points and
  // returns the upper one, the smallest share known to reach the target.
  ProfilerConfig c;
  c.tolerance = 0;
  CurveRunner runner([](double s) { return s < 0.333 ? 10.0 : 100.0; });
  auto p = MakeProfiler(c).ProfileTraining(runner);
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->quota.request, 0.34);  // 0.33 < 0.333 <= 0.34
  EXPECT_DOUBLE_EQ(p->quota.limit, 0.5);     // T(50 %) = T1 exactly: within +-0 % at once
  EXPECT_LE(p->trials, 1 + 2 * 7);
}

TEST(ProfilerTest, TrainingPropertyOverRandomSaturatingCurves) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const double k = std::uniform_real_distribution<double>(0.01, 2)(rng);
    const double e = std::uniform_real_distribution<double>(0.5, 3)(rng);
    // Monotone, T(1) = 1.
    auto f = [&](double s) {
      return std::pow(s / (s + k), e) / std::pow(1 / (1 + k), e);
    };
    CurveRunner runner(f);
    auto p = MakeProfiler().ProfileTraining(runner);
    ASSERT_TRUE(p.ok()) << "seed=" << seed;
    const double r = p->quota.request, l = p->quota.limit;
    ASSERT_TRUE(ValidateQuota(p->quota).ok()) << "seed=" << seed << " " << r << "/" << l;
    // Either within tolerance of the target, or the grid point just above it.
    const bool near_req = std::abs(f(r) - 0.8) <= 0.02 * 0.8;
    ASSERT_TRUE(near_req || (f(r) >= 0.8 && f(r - 0.01) < 0.8)) << "seed=" << seed << " r=" << r;
    ASSERT_TRUE(f(l) >= 0.98 || (f(l) >= 1.0 - 1e-12)) << "seed=" << seed << " l=" << l;
    ASSERT_LE(p->trials, 1 + 2 * 7) << "seed=" << seed;
  }
}

TEST(ProfilerTest, RunnerErrorsAndBadResultsPropagate) {
  class Failing : public TrialRunner {
   public:
    absl::StatusOr<TrialResult> Run(const Trial&) override {
      return absl::UnavailableError("GPU busy");
    }
  } failing;
  EXPECT_EQ(MakeProfiler().ProfileTraining(failing).status().code(),
            absl::StatusCode::kUnavailable);
  CurveRunner zero([](double) { return 0.0; });
  EXPECT_EQ(MakeProfiler().ProfileTraining(zero).status().code(),
            absl::StatusCode::kFailedPrecondition);
  class NoTime : public TrialRunner {
   public:
    absl::StatusOr<TrialResult> Run(const Trial&) override { return TrialResult{}; }
  } no_time;
  EXPECT_EQ(MakeProfiler().ProfileInference(no_time, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  ProfilerConfig bad;
  bad.request_fraction = 1.2;
  EXPECT_FALSE(Profiler::Create(bad).ok());
  bad = {};
  bad.sm_step = 0.001;  // finer than sm_unit
  EXPECT_FALSE(Profiler::Create(bad).ok());
}

}  // namespace
}  // namespace sluice::core
