// The quart registry entry: the PipelineScaler adapter (samples in -> decisions out, zero deltas
// on a re-Decide, the decision period), params reaching QuartScaler and the placement, param
// errors naming the key, and the per-function scaler for stages no pipeline drives.
#include "core/registry/quart_policies.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

std::unique_ptr<PolicySet> Make(std::vector<PolicyParam> params = {}) {
  auto s = MakeQuartPolicySet(params, "exp.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string Error(std::vector<PolicyParam> params) {
  auto s = MakeQuartPolicySet(params, "exp.yaml");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : std::string(s.status().message());
}

std::vector<FunctionTraits> Stages(int n, double mu = 10) {
  std::vector<FunctionTraits> v(n);
  for (int i = 0; i < n; ++i) {
    v[i].id = FunctionId(i + 1);
    v[i].capacity_rps = mu;
    v[i].max_instances = 32;
  }
  return v;
}

std::vector<PipelineStageTraits> StageTraits(int n) {
  std::vector<PipelineStageTraits> v(n);
  for (auto& t : v)
    t.latency_target = absl::Milliseconds(300);
  return v;
}

// Three stages at 20 rps; stage 1 has too few replicas and a long queue.
std::vector<PipelineStageSample> CongestedMiddle() {
  std::vector<PipelineStageSample> s(3);
  for (auto& x : s) {
    x.arrival_rps = 20;
    x.ready_replicas = 4;
    x.measured_latency = absl::Milliseconds(120);
  }
  s[1].ready_replicas = 2;
  s[1].queue_length = 40;
  s[1].measured_latency = absl::Seconds(2);
  return s;
}

TEST(QuartPolicySet, PipelineScalerTurnsSamplesIntoDecisions) {
  auto set = Make();
  EXPECT_EQ(set->placement().name(), "quart");
  EXPECT_EQ(set->QuotaFor(Stages(1)[0]), (SmQuota{1, 1}));
  auto p = set->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name(), "quart");
  p->Observe(CongestedMiddle(), kT0);
  const PipelineDecision d = p->Decide(kT0, 64);
  ASSERT_EQ(d.stages.size(), 3u);
  EXPECT_TRUE(d.stages[1].key);
  EXPECT_GT(d.stages[1].replica_delta, 0);
  EXPECT_EQ(d.key_stages, std::vector<int>{1});
  EXPECT_FALSE(d.stages[0].key);
  EXPECT_LE(d.stages[0].replica_delta, 0);
  // The same window again: nothing to do.
  const PipelineDecision again = p->Decide(kT0 + absl::Seconds(1), 64);
  for (const PipelineStageDecision& s : again.stages) {
    EXPECT_EQ(s.replica_delta, 0);
    EXPECT_EQ(s.cpu_worker_delta, 0);
  }
  EXPECT_EQ(p->NextWakeup(), absl::InfiniteFuture());
}

TEST(QuartPolicySet, DecidesAtMostOncePerPeriod) {
  auto set = Make({{"period_s", "5", 3}});
  auto p = set->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  p->Observe(CongestedMiddle(), kT0);
  EXPECT_GT(p->Decide(kT0, 0).stages[1].replica_delta, 0);
  p->Observe(CongestedMiddle(), kT0 + absl::Seconds(1));
  EXPECT_EQ(p->Decide(kT0 + absl::Seconds(1), 0).stages[1].replica_delta, 0);
  EXPECT_EQ(p->NextWakeup(), kT0 + absl::Seconds(5));
  EXPECT_GT(p->Decide(kT0 + absl::Seconds(5), 0).stages[1].replica_delta, 0);
}

TEST(QuartPolicySet, ParamsReachTheScaler) {
  // No stage can take 1e6 / 3 of the latency: no key stage, whatever the load.
  auto set = Make({{"key_share_factor", "1000000", 2}});
  auto p = set->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  p->Observe(CongestedMiddle(), kT0);
  EXPECT_TRUE(p->Decide(kT0, 0).key_stages.empty());
}

TEST(QuartPolicySet, TotalReplicasReachesTheScaler) {
  // Stage 1 alone asks for more than 2 replicas; with R_total 10 it may add 10 - 10 = 0.
  auto free = Make();
  auto p = free->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  p->Observe(CongestedMiddle(), kT0);
  EXPECT_GT(p->Decide(kT0, 0).stages[1].replica_delta, 0);
  auto bounded = Make({{"total_replicas", "10", 2}});
  auto q = bounded->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  q->Observe(CongestedMiddle(), kT0);
  EXPECT_EQ(q->Decide(kT0, 0).stages[1].replica_delta, 0);
}

TEST(QuartPolicySet, RebalanceReachesTheScaler) {
  // R_total 10 is full (4 + 3 + 3) and stage 1 is congested: without rebalance it gets nothing;
  // with it, stage 0's surplus (4 replicas for 5 rps at mu 10) moves to stage 1.
  std::vector<PipelineStageSample> in = CongestedMiddle();
  in[0].ready_replicas = 4;
  in[0].arrival_rps = 5;
  auto plain = Make({{"total_replicas", "10", 2}});
  auto p = plain->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  p->Observe(in, kT0);
  EXPECT_EQ(p->Decide(kT0, 0).stages[1].replica_delta, 0);
  auto moving = Make({{"total_replicas", "10", 2}, {"rebalance", "true", 3}});
  auto q = moving->MakePipelineScaler(Stages(3), StageTraits(3), absl::Seconds(1));
  q->Observe(in, kT0);
  const PipelineDecision d = q->Decide(kT0, 0);
  EXPECT_GT(d.stages[1].replica_delta, 0);
  EXPECT_LT(d.stages[0].replica_delta, 0);
  int sum = 0;
  for (const PipelineStageDecision& s : d.stages)
    sum += s.replica_delta;
  EXPECT_EQ(sum, 0);  // moved, not added: the budget stays full
}

TEST(QuartPolicySet, NoPipelineScalerWhenAStageCannotBeSized) {
  auto set = Make();
  EXPECT_EQ(set->MakePipelineScaler(Stages(3, 0), StageTraits(3), absl::Seconds(1)), nullptr);
  EXPECT_EQ(set->MakePipelineScaler(Stages(3), StageTraits(2), absl::Seconds(1)), nullptr);
  EXPECT_EQ(set->MakePipelineScaler({}, {}, absl::Seconds(1)), nullptr);
  // A stage budget at or below the service time, or none: clamped or derived, never a failure.
  std::vector<PipelineStageTraits> odd = StageTraits(3);
  odd[0].latency_target = absl::Milliseconds(10);
  odd[1].latency_target = absl::ZeroDuration();
  odd[2].cpu.cpu_slowdown = 4;
  EXPECT_NE(set->MakePipelineScaler(Stages(3), odd, absl::InfiniteDuration()), nullptr);
}

TEST(QuartPolicySet, FunctionScalerForStagesWithoutAPipeline) {
  auto set = Make();
  FunctionTraits f = Stages(1)[0];
  f.slo = absl::Milliseconds(300);
  auto s = set->MakeScaler(f);
  ASSERT_NE(s, nullptr);
  LoadSample x;
  x.at = kT0;
  x.rps = 40;
  s->Observe(x);
  EXPECT_GE(s->Desired(kT0), 5);
  x.at = kT0 + absl::Seconds(1);
  x.rps = 0;
  s->Observe(x);
  EXPECT_GE(s->Desired(x.at), 5);  // held (hold_s 30)
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(31)), 0);
}

TEST(QuartPolicySet, BadParamsNameTheKeyAndLine) {
  EXPECT_THAT(Error({{"kp", "-1", 3}}), HasSubstr("exp.yaml:3"));
  EXPECT_THAT(Error({{"kp", "-1", 3}}), HasSubstr("'kp'"));
  EXPECT_THAT(Error({{"correction_bound_factor", "0.5", 4}}),
              HasSubstr("'correction_bound_factor'"));
  EXPECT_THAT(Error({{"cache_slack", "-1", 5}}), HasSubstr("'cache_slack'"));
  EXPECT_THAT(Error({{"period_s", "0", 6}}), HasSubstr("'period_s'"));
  EXPECT_THAT(Error({{"beta_min", "2", 7}}), HasSubstr("'beta_min'"));
  EXPECT_THAT(Error({{"gain", "1", 8}}), HasSubstr("'gain'"));
  EXPECT_THAT(Error({{"total_replicas", "-1", 9}}), HasSubstr("'total_replicas'"));
  EXPECT_THAT(Error({{"rebalance", "maybe", 10}}), HasSubstr("'rebalance'"));
  EXPECT_THAT(Error({{"rebalance", "true", 11}}), HasSubstr("total_replicas > 0"));
  EXPECT_THAT(Error({{"rebalance", "true", 11}}), HasSubstr("exp.yaml:11"));
  EXPECT_THAT(Error({{"rebalance_headroom", "0.5", 12}}), HasSubstr("'rebalance_headroom'"));
  EXPECT_THAT(Error({{"rebalance_cooldown_s", "-1", 13}}), HasSubstr("'rebalance_cooldown_s'"));
}

}  // namespace
}  // namespace sluice::core
