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

TEST(ComputeSharesTest, TimeSlicedPartitionsShareSmTime) {
  // Two whole-GPU partitions at q = 0.5 fill one GPU's SM-time: each keeps its partition.
  std::vector<ShareDemand> d = {{1.0, 1.0, 0.5}, {1.0, 1.0, 0.5}};
  std::vector<double> s(2);
  ComputeShares(d, /*work_conserving=*/false, s);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 1.0);
  // Three oversubscribe it 1.5x: the partitions shrink by 1 / 1.5.
  d.push_back({1.0, 1.0, 0.5});
  s.resize(3);
  ComputeShares(d, false, s);
  for (double x : s)
    EXPECT_NEAR(x, 1 / 1.5, 1e-12);
}

TEST(ComputeSharesTest, WaterFillingHandsOutSmTime) {
  // SM-time used by the guarantees: 0.2 x 0.5 + 0.4 = 0.5. The rest is split 1:2 by request as
  // SM-time: 1/6 to the sliced instance (a share of 1/3 at q = 0.5), 1/3 to the other.
  std::vector<ShareDemand> d = {{0.2, 1.0, 0.5}, {0.4, 1.0, 1.0}};
  std::vector<double> s(2);
  ComputeShares(d, true, s);
  EXPECT_NEAR(s[0], 0.2 + 1.0 / 3, 1e-12);
  EXPECT_NEAR(s[1], 0.4 + 1.0 / 3, 1e-12);
  EXPECT_NEAR(s[0] * 0.5 + s[1], 1.0, 1e-12);
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

TEST(GpuShareModelTest, TimeQuotaReachesTheLatencyNotTheShare) {
  Fixture f(/*work_conserving=*/true);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{1.0, 1.0, 0.5});
  f.model.Start(0, f.Batch());  // LinearLatency: 100 ms / q = 200 ms
  EXPECT_DOUBLE_EQ(f.model.share(0, kGpu0), 1.0);
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 200}});
  // SM-time: the whole partition, half of the time, for 200 ms.
  EXPECT_NEAR(f.model.TakeUsedShareSeconds(kGpu0, 0), 1.0 * 0.5 * 0.2, 1e-9);
}

TEST(GpuShareModelTest, LiveQuotaChangeCarriesProgressOver) {
  Fixture f(/*work_conserving=*/true);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{1.0, 1.0, 0.5});
  f.model.Start(0, f.Batch());             // 200 ms at q = 0.5
  f.env.Advance(absl::Milliseconds(100));  // half done
  f.model.SetQuota(0, SmQuota{1.0, 1.0, 1.0});
  EXPECT_EQ(f.model.quota(0).time_quota, 1.0);
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 150}});  // the second half at 100 ms per batch
  EXPECT_NEAR(f.model.TakeUsedShareSeconds(kGpu0, 0), 0.5 * 0.1 + 1.0 * 0.05, 1e-9);
  // A change while idle applies to the next item: 100 ms / 0.25.
  f.model.SetQuota(0, SmQuota{1.0, 1.0, 0.25});
  f.model.Start(0, f.Batch());
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 150}, {0, 1100 + 400}});
}

TEST(GpuShareModelTest, QuotaStepResharesCoRunners) {
  Fixture f(/*work_conserving=*/false);
  f.model.Attach(0, std::vector<GpuId>{kGpu0}, SmQuota{1.0, 1.0, 0.5});
  f.model.Attach(1, std::vector<GpuId>{kGpu0}, SmQuota{1.0, 1.0, 0.5});
  f.model.Start(0, f.Batch());
  f.model.Start(1, f.Batch());  // SM-time 0.5 + 0.5: both at share 1, 200 ms
  f.env.Advance(absl::Milliseconds(100));
  // Instance 0 to q = 1: SM-time 1.5, both partitions shrink to 2/3. Instance 0 then takes
  // 150 ms per batch (its second half ends at 175 ms); instance 1 takes 300 ms, so it is 3/4 done
  // at 175 ms and alone again (share 1, 200 ms per batch): its last quarter ends at 225 ms.
  f.model.SetQuota(0, SmQuota{1.0, 1.0, 1.0});
  EXPECT_NEAR(f.model.share(1, kGpu0), 2.0 / 3, 1e-12);
  f.env.Advance(absl::Seconds(1));
  ExpectDone(f.rec, {{0, 175}, {1, 225}});
}

}  // namespace
}  // namespace sluice::sim
