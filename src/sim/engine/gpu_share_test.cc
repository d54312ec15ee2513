// Hand-worked cases of the fluid GPU model: share computation (guarantees, proportional scaling,
// water-filling up to caps) and completion times when co-located batches overlap, caps change
// mid-batch, interference applies, or a multi-GPU instance waits on its slowest shard.
#include "sim/engine/gpu_share.h"

#include <memory>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

#include "common/sim_env.h"
#include "sim/engine/testing/fake_policy.h"

namespace sluice::sim {
namespace {

using core::GpuId;
using core::SmQuota;

TEST(ComputeSharesTest, GuaranteesScaleDownWhenOversubscribed) {
  std::vector<ShareDemand> d = {{0.6, 1.0}, {0.6, 1.0}};
  std::vector<double> s(2);
  ComputeShares(d, /*work_conserving=*/true, s);
  EXPECT_DOUBLE_EQ(s[0], 0.5);
  EXPECT_DOUBLE_EQ(s[1], 0.5);
}

TEST(ComputeSharesTest, NotWorkConservingRunsAtQuota) {
  std::vector<ShareDemand> d = {{0.3, 0.3}};
  std::vector<double> s(1);
  ComputeShares(d, /*work_conserving=*/false, s);
  EXPECT_DOUBLE_EQ(s[0], 0.3);
  d = {{0.3, 1.0}};  // even with headroom in the cap
  ComputeShares(d, false, s);
  EXPECT_DOUBLE_EQ(s[0], 0.3);
}

TEST(ComputeSharesTest, LeftoverSharedInProportionToRequest) {
  std::vector<ShareDemand> d = {{0.2, 0.5}, {0.4, 1.0}};
  std::vector<double> s(2);
  ComputeShares(d, true, s);
  EXPECT_NEAR(s[0], 0.2 + 0.4 / 3, 1e-12);
  EXPECT_NEAR(s[1], 0.4 + 0.8 / 3, 1e-12);
}

TEST(ComputeSharesTest, WaterFillingRedistributesWhatACapRefuses) {
  std::vector<ShareDemand> d = {{0.2, 0.25}, {0.4, 1.0}};
  std::vector<double> s(2);
  ComputeShares(d, true, s);
  EXPECT_NEAR(s[0], 0.25, 1e-12);
  EXPECT_NEAR(s[1], 0.75, 1e-12);
}

TEST(ComputeSharesTest, CapBelowRequestBindsTheGuarantee) {
  std::vector<ShareDemand> d = {{0.5, 0.1}, {0.5, 0.2}};
  std::vector<double> s(2);
  ComputeShares(d, true, s);
  EXPECT_NEAR(s[0], 0.1, 1e-12);
  EXPECT_NEAR(s[1], 0.2, 1e-12);
}

class Recorder : public GpuShareModel::Listener {
 public:
  explicit Recorder(common::Env& env) : env_(env) {}
  void OnWorkDone(int32_t id) override { done.push_back({id, env_.Now() - absl::UnixEpoch()}); }
  std::vector<std::pair<int32_t, absl::Duration>> done;

 private:
  common::Env& env_;
};

// Model "fake": 100 ms per batch at share 1 (so 200 ms at 0.5).
struct Fixture {
  explicit Fixture(bool work_conserving, double kappa = 0, int gpus = 2)
      : perf(testing::MakeFakePerf(absl::Milliseconds(100), absl::ZeroDuration(),
                                   absl::Milliseconds(100), kappa)),
        rec(env),
        model(env, *perf, gpus, work_conserving, rec) {}
  WorkItem Batch() {
    WorkItem w;
    w.model = (*perf->Find("fake"))->latency;
    return w;
  }
  common::ManualEnv env;
  std::unique_ptr<core::PerfModel> perf;
  Recorder rec;
  GpuShareModel model;
};

void ExpectDone(const Recorder& r, std::vector<std::pair<int32_t, double>> want_ms) {
  ASSERT_EQ(r.done.size(), want_ms.size());
  for (size_t i = 0; i < want_ms.size(); ++i) {
    EXPECT_EQ(r.done[i].first, want_ms[i].first) << i;
    EXPECT_NEAR(absl::ToDoubleMilliseconds(r.done[i].second), want_ms[i].second, 1e-6) << i;
  }
}

const GpuId kGpu0(0);
const GpuId kGpu1(1);

TEST(GpuShareModelTest, WorkConservingOverlapCarriesProgressAcrossShareChanges) {
  Fixture f(/*work_conserving=*/true);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  f.model.Attach(1, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  f.model.Start(0, f.Batch());  // alone: share 1, due at 100 ms
  EXPECT_DOUBLE_EQ(f.model.share(0, kGpu0), 1.0);
  f.env.Advance(absl::Milliseconds(50));  // A half done
  f.model.Start(1, f.Batch());            // both 0.5: A's second half takes 100 ms
  EXPECT_DOUBLE_EQ(f.model.share(0, kGpu0), 0.5);
  f.env.Advance(absl::Seconds(1));
  // A at 150 ms; B half done by then, alone at share 1 for its last 50 ms.
  ExpectDone(f.rec, {{0, 150}, {1, 200}});
  EXPECT_NEAR(f.model.TakeUsedShareSeconds(kGpu0, 0), 1.0 * 0.05 + 0.5 * 0.1, 1e-9);
  EXPECT_NEAR(f.model.TakeUsedShareSeconds(kGpu0, 1), 0.5 * 0.1 + 1.0 * 0.05, 1e-9);
}

TEST(GpuShareModelTest, StaticSharesRunAtQuota) {
  Fixture f(/*work_conserving=*/false);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 0.5});
  f.model.Attach(1, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 0.5});
  f.model.Start(0, f.Batch());
  f.env.Advance(absl::Milliseconds(50));
  f.model.Start(1, f.Batch());
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 200}, {1, 250}});
}

TEST(GpuShareModelTest, InterferenceSlowsCoRunners) {
  Fixture f(/*work_conserving=*/true, /*kappa=*/0.5);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  f.model.Attach(1, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  f.model.Start(0, f.Batch());
  f.env.Advance(absl::Milliseconds(50));
  f.model.Start(1, f.Batch());
  f.env.Advance(absl::Seconds(1));
  // Together: share 0.5 and slowdown 1 + 0.5 x 0.5 = 1.25, i.e. 250 ms per batch (4/s). A's
  // remaining half: 125 ms -> 175; B did half by then, then 50 ms alone -> 225.
  ExpectDone(f.rec, {{0, 175}, {1, 225}});
}

TEST(GpuShareModelTest, CapChangeMidBatchReschedulesCompletion) {
  Fixture f(/*work_conserving=*/true);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  f.model.Start(0, f.Batch());
  f.env.Advance(absl::Milliseconds(50));
  const std::vector<double> caps = {0.5};
  f.model.SetCaps(kGpu0, caps);  // second half at 0.5: 100 ms
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 150}});
  f.model.ResetCaps(kGpu0);
  f.model.Start(0, f.Batch());
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 150}, {0, 1050 + 100}});  // restarted at 1050 ms, share 1
}

TEST(GpuShareModelTest, MultiGpuInstanceWaitsForItsSlowestShard) {
  Fixture f(/*work_conserving=*/true);
  f.model.Attach(0, std::vector<GpuId>{kGpu0, kGpu1}, SmQuota{0.5, 1.0});
  f.model.Attach(1, std::vector<GpuId>{kGpu1}, SmQuota{0.5, 0.5});
  WorkItem long_job;
  long_job.kind = WorkItem::Kind::kFixed;
  long_job.fixed_seconds = 10;
  f.model.Start(1, long_job);
  f.model.Start(0, f.Batch());  // share 1 on GPU 0, 0.5 on GPU 1 -> gated at 200 ms
  EXPECT_DOUBLE_EQ(f.model.share(0, kGpu0), 1.0);
  EXPECT_DOUBLE_EQ(f.model.share(0, kGpu1), 0.5);
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 200}});
}

TEST(GpuShareModelTest, DetachAfterDoneResharesCoRunners) {
  Fixture f(/*work_conserving=*/true);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  f.model.Attach(1, std::vector<GpuId>{kGpu0}, SmQuota{0.5, 1.0});
  WorkItem short_job;
  short_job.kind = WorkItem::Kind::kFixed;
  short_job.fixed_seconds = 0.05;
  f.model.Start(0, short_job);
  f.model.Start(1, f.Batch());  // 0.5 for 50 ms (quarter done), then alone: 75 ms more
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 50}, {1, 125}});
  f.model.Detach(0);
  EXPECT_EQ(f.model.residents(kGpu0).size(), 1u);
}

}  // namespace
}  // namespace sluice::sim
