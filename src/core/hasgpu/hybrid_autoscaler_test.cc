// HybridAutoscaler on small hand-built clusters with LinearLatency (a pod at batch 4 serves
// 100 x s x q requests/s): vertical before horizontal, argmin-HGO horizontal with alignment, a new
// GPU only when needed, stepwise scale-down with cool-down, never below one pod, and config
// validation.
#include "core/hasgpu/hybrid_autoscaler.h"

#include "gtest/gtest.h"

#include "core/hasgpu/testing/linear_latency.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch() + absl::Hours(1);
using Kind = ScalingAction::Kind;

class HybridAutoscalerTest : public testing::Test {
 protected:
  HybridAutoscalerTest() : state_(ClusterSpec::Uniform(1, NodeSpec{})) {
    fn_.latency = &latency_;
    fn_.max_batch = 4;
    fn_.memory = Bytes::GiB(4);
  }

  std::unique_ptr<HybridAutoscaler> Make(HybridAutoscalerConfig c = {}) {
    auto s = HybridAutoscaler::Create(c, fn_);
    EXPECT_TRUE(s.ok()) << s.status();
    return std::move(*s);
  }
  // A pod of this function (function 1) or a neighbour's (function != 1).
  PodView Pod(int inst, int gpu, double s, double q, int function = 1) {
    EXPECT_TRUE(state_.Add({InstanceId(inst), FunctionId(function), GpuId(gpu), Bytes::GiB(4),
                            {s, s, q}})
                    .ok());
    return PodView{InstanceId(inst), GpuId(gpu), {s, s, q}, 4, true};
  }
  static LoadSample Load(double rps, double s = 0) {
    return LoadSample{kT0 + absl::Seconds(s), rps, 0, 0, 0};
  }

  LinearLatency latency_;
  HasGpuFunction fn_;
  ClusterState state_;
};

TEST_F(HybridAutoscalerTest, VerticalBeforeHorizontal) {
  std::vector<PodView> pods = {Pod(1, 0, 0.5, 0.4)};  // C = 20
  auto s = Make();
  s->Observe(Load(24));  // 24 > 0.8 x 20: gap = 30 - 20 = 10
  std::vector<ScalingAction> a = s->Decide(kT0, pods, state_);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Kind::kSetQuota);
  EXPECT_EQ(a[0].instance, InstanceId(1));
  EXPECT_NEAR(a[0].quota.time_quota, 0.6, 1e-9);  // two steps of 0.1, +10 rps
  EXPECT_DOUBLE_EQ(a[0].quota.limit, 0.5);
}

TEST_F(HybridAutoscalerTest, LargerPartitionsStepFirst) {
  std::vector<PodView> pods = {Pod(1, 0, 0.2, 0.5), Pod(2, 1, 0.6, 0.5)};  // C = 10 + 30
  auto s = Make();
  s->Observe(Load(36));  // gap = 45 - 40 = 5: one step of the 0.6 pod (+6)
  std::vector<ScalingAction> a = s->Decide(kT0, pods, state_);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].instance, InstanceId(2));
  EXPECT_NEAR(a[0].quota.time_quota, 0.6, 1e-9);
}

// GPU0 caps the pod at q = 0.7 (its 0.5 slot is shared with a neighbour, the other half holds a
// 0.4 type); the rest goes to a new pod on the least-HGO used GPU (GPU2, H = 0.2), following the
// type there, cheapest (s, q) covering the gap.
TEST_F(HybridAutoscalerTest, HorizontalOnLeastHgoGpuAfterVerticalHeadroom) {
  std::vector<PodView> pods = {Pod(1, 0, 0.5, 0.6)};  // C = 30
  Pod(2, 0, 0.5, 0.3, 2);
  Pod(3, 0, 0.4, 1.0, 3);  // GPU0 H = 0.85
  Pod(4, 1, 0.3, 1.0, 4);  // GPU1 H = 0.3
  Pod(5, 2, 0.2, 1.0, 5);  // GPU2 H = 0.2
  auto s = Make();
  s->Observe(Load(42));  // gap = 52.5 - 30 = 22.5; vertical +5 (q 0.7) leaves 17.5
  std::vector<ScalingAction> a = s->Decide(kT0, pods, state_);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].kind, Kind::kSetQuota);
  EXPECT_NEAR(a[0].quota.time_quota, 0.7, 1e-9);
  EXPECT_EQ(a[1].kind, Kind::kAdd);
  EXPECT_EQ(a[1].gpu, GpuId(2));
  EXPECT_DOUBLE_EQ(a[1].quota.limit, 0.2);  // s x q = 0.18 >= 0.175, the cheapest
  EXPECT_NEAR(a[1].quota.time_quota, 0.9, 1e-9);
  EXPECT_EQ(a[1].batch, 1);  // at s <= 0.25 every batch serves the same: the smallest
}

TEST_F(HybridAutoscalerTest, OpensANewGpuOnlyWhenNoUsedGpuFits) {
  std::vector<PodView> pods = {Pod(1, 0, 0.5, 1.0)};  // C = 50, GPU0 full with a neighbour
  Pod(2, 0, 0.5, 1.0, 2);
  auto s = Make();
  s->Observe(Load(56));  // gap = 70 - 50 = 20: s x q >= 0.2
  std::vector<ScalingAction> a = s->Decide(kT0, pods, state_);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Kind::kAdd);
  EXPECT_EQ(a[0].gpu, GpuId(1));
  EXPECT_NEAR(a[0].quota.limit * a[0].quota.time_quota, 0.2, 1e-9);
}

TEST_F(HybridAutoscalerTest, NoPodsStartsOneServingRmin) {
  auto s = Make();
  std::vector<ScalingAction> a = s->Decide(kT0, {}, state_);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, Kind::kAdd);
  EXPECT_NEAR(a[0].quota.limit * a[0].quota.time_quota, 0.01, 1e-9);  // 1 rps: s 0.1, q 0.1
  EXPECT_EQ(s->InitialConfig().batch, 1);
}

// Smaller partitions step down first; a pod at the bottom step is removed; the last one stays,
// at one step; a second scale-down waits for the cool-down, and NextWakeup says when.
TEST_F(HybridAutoscalerTest, StepwiseScaleDownCooldownAndNeverBelowOnePod) {
  std::vector<PodView> pods = {Pod(1, 0, 0.5, 0.5), Pod(2, 1, 0.3, 0.2)};  // C = 25 + 6
  auto s = Make();
  s->Observe(Load(2));  // 2 < 0.5 x 31; target max(2.5, r_min 1)
  std::vector<ScalingAction> a = s->Decide(kT0, pods, state_);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].kind, Kind::kRemove);
  EXPECT_EQ(a[0].instance, InstanceId(2));
  EXPECT_EQ(a[1].kind, Kind::kSetQuota);
  EXPECT_NEAR(a[1].quota.time_quota, 0.1, 1e-9);  // 5 rps >= 2.5

  // Apply, then load rises a little and falls again inside the cool-down.
  state_.Remove(InstanceId(2));
  ASSERT_TRUE(state_.UpdateQuota(InstanceId(1), {0.5, 0.5, 0.1}).ok());
  pods = {PodView{InstanceId(1), GpuId(0), {0.5, 0.5, 0.1}, 4, true}};
  s->Observe(Load(3.9, 1));
  EXPECT_TRUE(s->Decide(kT0 + absl::Seconds(1), pods, state_).empty());  // 3.9 < 0.8 x 5? no-op
  EXPECT_EQ(s->NextWakeup(), absl::InfiniteFuture());
  for (int t = 2; t < 40; ++t) {
    s->Observe(Load(0, t));
    EXPECT_TRUE(s->Decide(kT0 + absl::Seconds(t), pods, state_).empty()) << t;
  }
}

TEST_F(HybridAutoscalerTest, CooldownDelaysTheSecondScaleDown) {
  std::vector<PodView> pods = {Pod(1, 0, 0.5, 1.0), Pod(2, 1, 0.5, 1.0)};  // C = 100
  auto s = Make();
  s->Observe(Load(30));  // < 50: target 37.5 -> the newest 0.5 pod steps to 0.1? no: see below
  std::vector<ScalingAction> first = s->Decide(kT0, pods, state_);
  ASSERT_FALSE(first.empty());
  // Pod 2 (newest of equal partitions) goes down to 0.1 and is removed (50 left >= 37.5);
  // pod 1 then steps to 0.8 (40 >= 37.5).
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].kind, Kind::kRemove);
  EXPECT_EQ(first[0].instance, InstanceId(2));
  EXPECT_NEAR(first[1].quota.time_quota, 0.8, 1e-9);
  state_.Remove(InstanceId(2));
  ASSERT_TRUE(state_.UpdateQuota(InstanceId(1), {0.5, 0.5, 0.8}).ok());
  pods = {PodView{InstanceId(1), GpuId(0), {0.5, 0.5, 0.8}, 4, true}};
  s->Observe(Load(0, 10));  // estimate drops below 0.5 x 40
  EXPECT_TRUE(s->Decide(kT0 + absl::Seconds(10), pods, state_).empty());
  EXPECT_EQ(s->NextWakeup(), kT0 + absl::Seconds(30));
  std::vector<ScalingAction> later = s->Decide(kT0 + absl::Seconds(30), pods, state_);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].kind, Kind::kSetQuota);
  EXPECT_LT(later[0].quota.time_quota, 0.8);
}

TEST_F(HybridAutoscalerTest, QueueCountsAsDemand) {
  std::vector<PodView> pods = {Pod(1, 0, 0.5, 0.4)};  // C = 20
  auto s = Make();
  s->Observe(LoadSample{kT0, 4, 1, 0, 20});  // 4 + 20 / 1 s = 24 -> as VerticalBeforeHorizontal
  std::vector<ScalingAction> a = s->Decide(kT0, pods, state_);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_NEAR(a[0].quota.time_quota, 0.6, 1e-9);
}

TEST(HybridAutoscalerConfigTest, RejectsOutOfRangeNamingTheField) {
  struct Case {
    void (*set)(HybridAutoscalerConfig&);
    const char* field;
  } cases[] = {
      {[](HybridAutoscalerConfig& c) { c.alpha = 1.5; }, "alpha"},
      {[](HybridAutoscalerConfig& c) { c.beta = 0.9; }, "beta"},
      {[](HybridAutoscalerConfig& c) { c.capacity.quota_step = 0; }, "quota_step"},
      {[](HybridAutoscalerConfig& c) { c.capacity.sm_step = 2; }, "sm_step"},
      {[](HybridAutoscalerConfig& c) { c.cooldown = absl::Seconds(-1); }, "cooldown_s"},
      {[](HybridAutoscalerConfig& c) { c.max_partition_types = 0; }, "max_partition_types"},
      {[](HybridAutoscalerConfig& c) { c.kalman.measurement_noise = 0; }, "measurement_noise"},
  };
  for (const Case& k : cases) {
    HybridAutoscalerConfig c;
    k.set(c);
    absl::Status s = ValidateHybridConfig(c);
    ASSERT_FALSE(s.ok()) << k.field;
    EXPECT_NE(s.message().find(k.field), std::string::npos) << s;
  }
  EXPECT_TRUE(ValidateHybridConfig({}).ok());
}

}  // namespace
}  // namespace sluice::core
