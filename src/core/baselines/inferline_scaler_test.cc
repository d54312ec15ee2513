// Tests for InferLineScaler: the network-calculus need, the tuner's immediate scale-up and
// held scale-down, the planner's re-plan, bounds, once-per-window decisions, config errors.
#include "core/baselines/inferline_scaler.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

InferLineConfig Config(int stages = 2, absl::Duration plan = absl::Seconds(1000)) {
  InferLineConfig c;
  InferLineStage s;
  s.service_rps = 10;
  s.budget = absl::Milliseconds(600);  // slack 0.5 s over the 0.1 s service time
  s.max_replicas = 64;
  c.stages.assign(stages, s);
  c.plan_period = plan;
  return c;
}

std::vector<PipelineStageSample> Window(double rps, int replicas, int stages = 2) {
  std::vector<PipelineStageSample> w(stages);
  for (auto& s : w) {
    s.arrival_rps = rps;
    s.ready_replicas = replicas;
  }
  return w;
}

TEST(InferLineScaler, NeedFollowsTheEnvelopeBound) {
  auto s = *InferLineScaler::Create(Config());
  s->Observe(Window(30, 1), kT0);
  // One window: A(1 s) = 30 queries; r mu >= 30 / (1 + 0.5) = 20 rps -> 2 replicas.
  EXPECT_EQ(s->Needed(0, absl::Seconds(60)), 2);
}

TEST(InferLineScaler, BurstScalesUpInTheSameWindowAndDownOnlyAfterTheHold) {
  auto s = *InferLineScaler::Create(Config());
  absl::Time t = kT0;
  int replicas = 1;
  for (int i = 0; i < 5; ++i, t += absl::Seconds(1)) {
    s->Observe(Window(10, replicas), t);
    replicas += s->Decide(t, 0).stages[0].replica_delta;
  }
  EXPECT_EQ(replicas, 1);
  s->Observe(Window(90, replicas), t);  // burst: 90 / 1.5 = 60 rps -> 6 replicas
  PipelineDecision d = s->Decide(t, 0);
  EXPECT_EQ(d.stages[0].replica_delta, 5);
  EXPECT_EQ(d.stages[1].replica_delta, 5);  // every stage sees each query
  EXPECT_TRUE(d.key_stages.empty());
  replicas = 6;
  // The burst stays in the tuner's 60 s history, so the need stays 6 for a minute; after it
  // leaves, the hold (30 s) must pass before replicas go.
  absl::Time first_down = absl::InfinitePast();
  for (int i = 1; i <= 120; ++i) {
    t += absl::Seconds(1);
    s->Observe(Window(10, replicas), t);
    const int delta = s->Decide(t, 0).stages[0].replica_delta;
    if (delta < 0 && first_down == absl::InfinitePast())
      first_down = t;
    replicas += delta;
  }
  ASSERT_NE(first_down, absl::InfinitePast());
  EXPECT_GE(first_down - (kT0 + absl::Seconds(5)), absl::Seconds(60 + 30));
  EXPECT_EQ(replicas, 1);
}

TEST(InferLineScaler, PlannerReplansFromItsTrace) {
  InferLineConfig c = Config(1, absl::Seconds(10));
  c.tuner_history = absl::Seconds(5);
  auto s = *InferLineScaler::Create(c);
  absl::Time t = kT0;
  s->Observe(Window(90, 1, 1), t);
  EXPECT_EQ(s->Decide(t, 0).stages[0].replica_delta, 5);
  // Ten quiet seconds: the planner's 10 s trace no longer holds the burst, so the re-plan at
  // t0 + 10 s drops the target at once (the tuner alone would wait for its 30 s hold).
  for (int i = 1; i <= 10; ++i) {
    t += absl::Seconds(1);
    s->Observe(Window(10, 6, 1), t);
    s->Decide(t, 0);
  }
  EXPECT_LT(s->target(0), 6);
}

TEST(InferLineScaler, ReDecideIsZeroAndBoundsHold) {
  InferLineConfig c = Config(1);
  c.stages[0].max_replicas = 3;
  c.stages[0].min_replicas = 2;
  auto s = *InferLineScaler::Create(c);
  s->Observe(Window(1000, 1, 1), kT0);
  EXPECT_EQ(s->Decide(kT0, 0).stages[0].replica_delta, 2);  // capped at 3
  EXPECT_EQ(s->Decide(kT0, 0).stages[0].replica_delta, 0);
  s->Observe(Window(1000, 1, 2), kT0);  // wrong stage count: ignored
  EXPECT_EQ(s->Decide(kT0, 0).stages[0].replica_delta, 0);
}

TEST(InferLineScaler, RejectsBadConfigNamingTheField) {
  InferLineConfig c = Config();
  c.stages[1].budget = absl::Milliseconds(50);  // below the 100 ms service time
  EXPECT_NE(InferLineScaler::Create(c).status().message().find("stages[1].budget"),
            std::string::npos);
  c = Config();
  c.plan_period = absl::ZeroDuration();
  EXPECT_NE(InferLineScaler::Create(c).status().message().find("plan_period"), std::string::npos);
}

}  // namespace
}  // namespace sluice::core
