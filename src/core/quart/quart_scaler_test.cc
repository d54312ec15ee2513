// Unit and property tests for QuartScaler.
#include "core/quart/quart_scaler.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

// n stages of mu 10 rps per replica, target 0.3 s (3x the 0.1 s service time), 1-16 replicas.
QuartConfig Config(int n) {
  QuartConfig c;
  QuartStageSpec s;
  s.service_rps = 10;
  s.max_replicas = 16;
  s.latency_target = absl::Milliseconds(300);
  s.cpu = {4.0, 2, 8};
  c.stages.assign(n, s);
  return c;
}

std::unique_ptr<QuartScaler> Make(const QuartConfig& c) {
  auto s = QuartScaler::Create(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

StageSample Sample(double lambda, int ready, double cv = 1.0) {
  StageSample s;
  s.arrival_rps = lambda;
  s.arrival_cv = cv;
  s.ready_replicas = ready;
  return s;
}

TEST(QuartScaler, ScalesUpOnlyTheCongestedKeyStage) {
  auto q = Make(Config(4));
  std::vector<StageSample> in(4, Sample(20, 4));
  in[2] = Sample(20, 2);  // rho 1: unstable
  in[2].queue_length = 30;
  q->Observe(in, kT0);
  const QuartDecision d = q->Decide(kT0, 0);
  EXPECT_EQ(d.key_stages, std::vector<int>{2});
  EXPECT_GT(d.stages[2].replica_delta, 0);
  for (int i : {0, 1, 3})
    EXPECT_EQ(d.stages[i].replica_delta, 0) << i;
}

TEST(QuartScaler, BarePidOvershootsAnOverload) {
  QuartConfig c = Config(1);
  c.correction_bound_factor = 0;
  auto q = Make(c);
  q->Observe({Sample(25, 2)}, kT0);
  EXPECT_EQ(q->Decide(kT0, 0).stages[0].replica_delta, 8);  // kp x error_limit
  auto bounded = Make(Config(1));
  bounded->Observe({Sample(25, 2)}, kT0);
  // ceil(2 x need 3) = 6, minus 2 ready, plus 1 probe.
  EXPECT_EQ(bounded->Decide(kT0, 0).stages[0].replica_delta, 5);
}

// Algorithm 1's R_total: a burst every stage sees at once asks for more replicas than the
// pipeline may hold (in the simulator: stages 0-6 took the whole cluster and stage 7 got
// none). With total_replicas the increments are cut evenly where the load is equal, and the
// sum never passes the bound; replicas already held are not drained to fit.
TEST(QuartScaler, TotalReplicasBoundsTheIncrementsAcrossStages) {
  QuartConfig c = Config(4);
  auto unbounded = Make(c);
  const std::vector<StageSample> burst(4, Sample(25, 2));
  unbounded->Observe(burst, kT0);
  int asked = 0;
  for (const StageDecision& s : unbounded->Decide(kT0, 0).stages)
    asked += 2 + s.replica_delta;
  EXPECT_GT(asked, 16);  // 4 x (2 + 5)
  c.total_replicas = 16;
  auto bounded = Make(c);
  bounded->Observe(burst, kT0);
  const QuartDecision d = bounded->Decide(kT0, 0);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(d.stages[i].replica_delta, 2) << i;  // 16 / 4 = 4 each, every stage served
  // Uneven load: cuts fall on the stage holding the most per stable-floor replica, so the
  // busier stage keeps more of its increment.
  c.total_replicas = 14;
  auto uneven = Make(c);
  const std::vector<StageSample> in = {Sample(45, 2), Sample(25, 2), Sample(5, 1), Sample(5, 1)};
  uneven->Observe(in, kT0);
  const QuartDecision u = uneven->Decide(kT0, 0);
  int sum = 0;
  for (int i = 0; i < 4; ++i)
    sum += in[i].ready_replicas + u.stages[i].replica_delta;
  EXPECT_EQ(sum, 14);
  EXPECT_GT(u.stages[1].replica_delta, 0);
  EXPECT_GT(u.stages[0].replica_delta, u.stages[1].replica_delta);
  // A bound below what is already held adds nothing and drains nothing.
  c.total_replicas = 4;
  auto tight = Make(c);
  tight->Observe(in, kT0);
  for (const StageDecision& s : tight->Decide(kT0, 0).stages)
    EXPECT_EQ(s.replica_delta, 0);
  c.total_replicas = -1;
  EXPECT_FALSE(QuartScaler::Create(c).ok());
}

// Not in the paper: with rebalance, a full budget moves a surplus stage's replicas to the stage
// FitTotal cut (the cluster-bound bursty wideresnet case: early stages held 6, a later key stage
// queued with no GPU left). Stage 0 holds 6 for 10 rps, stage 2 queues at 25 rps on 3.
std::vector<StageSample> FullBudget() {
  std::vector<StageSample> in = {Sample(10, 6), Sample(20, 3), Sample(25, 3)};
  in[2].queue_length = 30;
  in[2].measured_latency = absl::Seconds(2);
  return in;
}

TEST(QuartScaler, RebalanceMovesSurplusToTheCutKeyStage) {
  QuartConfig c = Config(3);
  c.total_replicas = 12;
  c.rebalance_from_entry = false;  // own rates: only the cut stage takes
  auto plain = Make(c);
  plain->Observe(FullBudget(), kT0);
  for (const StageDecision& s : plain->Decide(kT0, 0).stages)
    EXPECT_EQ(s.replica_delta, 0);  // the paper: nothing held moves
  c.rebalance = true;
  auto q = Make(c);
  q->Observe(FullBudget(), kT0);
  const QuartDecision d = q->Decide(kT0, 0);
  EXPECT_GT(d.stages[2].replica_delta, 0);
  EXPECT_EQ(d.stages[0].replica_delta, -d.stages[2].replica_delta);
  EXPECT_EQ(d.stages[1].replica_delta, 0);
  EXPECT_GE(6 + d.stages[0].replica_delta, 2);  // its stable floor at 1.25 x 10 rps
}

TEST(QuartScaler, RebalanceSparesBusyAndRecentlyRaisedStages) {
  QuartConfig c = Config(3);
  c.total_replicas = 12;
  c.rebalance = true;
  c.rebalance_from_entry = false;
  c.rebalance_cooldown = absl::Seconds(10);
  // Nothing short: no budget cut, nothing moves.
  auto idle = Make(c);
  std::vector<StageSample> in = FullBudget();
  in[2] = Sample(20, 3);
  idle->Observe(in, kT0);
  for (const StageDecision& s : idle->Decide(kT0, 0).stages)
    EXPECT_EQ(s.replica_delta, 0);
  // The would-be donor has requests waiting: it keeps its replicas.
  auto busy = Make(c);
  in = FullBudget();
  in[0].queue_length = 20;
  busy->Observe(in, kT0);
  EXPECT_GE(busy->Decide(kT0, 0).stages[0].replica_delta, 0);
  // Stage 0 scaled up at kT0; 5 s later (cooldown 10 s) it may not give, 11 s later it may.
  auto recent = Make(c);
  recent->Observe({Sample(45, 2), Sample(10, 2), Sample(10, 2)}, kT0);
  ASSERT_GT(recent->Decide(kT0, 0).stages[0].replica_delta, 0);
  recent->Observe(FullBudget(), kT0 + absl::Seconds(5));
  EXPECT_EQ(recent->Decide(kT0 + absl::Seconds(5), 0).stages[0].replica_delta, 0);
  recent->Observe(FullBudget(), kT0 + absl::Seconds(11));
  EXPECT_LT(recent->Decide(kT0 + absl::Seconds(11), 0).stages[0].replica_delta, 0);
  // Never below min_replicas: stage 0's floor is 6.
  c.stages[0].min_replicas = 6;
  auto floor = Make(c);
  floor->Observe(FullBudget(), kT0);
  EXPECT_EQ(floor->Decide(kT0, 0).stages[0].replica_delta, 0);
}

// A burst entering at stage 0 has not reached stage 1 yet: sized from its own rate stage 1 gives
// most of its replicas; sized from the entry (InferLine's way) it keeps its share of R_total.
TEST(QuartScaler, RebalanceFromEntryKeepsTheShareOfAStageTheBurstHasNotReached) {
  QuartConfig c = Config(3);
  c.total_replicas = 12;
  c.rebalance = true;
  c.rebalance_from_entry = false;
  std::vector<StageSample> in = {Sample(20, 3), Sample(5, 6), Sample(5, 3)};
  in[0].queue_length = 30;
  in[0].measured_latency = absl::Seconds(2);
  auto own = Make(c);
  own->Observe(in, kT0);
  const QuartDecision o = own->Decide(kT0, 0);
  c.rebalance_from_entry = true;
  auto entry = Make(c);
  entry->Observe(in, kT0);
  const QuartDecision e = entry->Decide(kT0, 0);
  EXPECT_GT(o.stages[0].replica_delta, 0);
  EXPECT_LT(o.stages[1].replica_delta, e.stages[1].replica_delta);
  // Each stage needs 4-5 at 1.25 x 20 rps; 12 / 3 stages' needs: it keeps floor(0.8 x 4.x) = 3.
  EXPECT_GE(6 + e.stages[1].replica_delta, 3);
  for (const QuartDecision* d : {&o, &e}) {
    int sum = 0;
    for (const StageDecision& s : d->stages)
      sum += s.replica_delta;
    EXPECT_EQ(sum, 0);
  }
}

// From the entry with the budget full, a stage below its share of R_total takes replicas
// before it congests: stage 2 (3 replicas, its own load still low) is where the entry's 25 rps
// are headed; stage 0's surplus moves there though stage 2 asked for nothing.
TEST(QuartScaler, RebalanceFromEntryFillsAStageBelowItsShare) {
  QuartConfig c = Config(3);
  c.total_replicas = 12;
  c.rebalance = true;
  const std::vector<StageSample> in = {Sample(25, 6), Sample(25, 4), Sample(5, 2)};
  auto own = Make([&] {
    QuartConfig o = c;
    o.rebalance_from_entry = false;
    return o;
  }());
  own->Observe(in, kT0);
  for (const StageDecision& s : own->Decide(kT0, 0).stages)
    EXPECT_EQ(s.replica_delta, 0);  // nothing cut, nothing moves
  auto entry = Make(c);
  entry->Observe(in, kT0);
  const QuartDecision d = entry->Decide(kT0, 0);
  EXPECT_LT(d.stages[0].replica_delta, 0);
  EXPECT_GT(d.stages[2].replica_delta, 0);
  EXPECT_EQ(d.stages[0].replica_delta + d.stages[1].replica_delta + d.stages[2].replica_delta, 0);
}

TEST(QuartScaler, RebalanceNeedsABudget) {
  QuartConfig c = Config(2);
  c.rebalance = true;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("'rebalance'"), std::string::npos);
  c.total_replicas = 8;
  c.rebalance_headroom = 0.9;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("'rebalance_headroom'"),
            std::string::npos);
  c.rebalance_headroom = 1.25;
  c.rebalance_cooldown = absl::Seconds(-1);
  EXPECT_NE(QuartScaler::Create(c).status().message().find("'rebalance_cooldown'"),
            std::string::npos);
}

TEST(QuartScaler, DecidesEachWindowOnce) {
  auto q = Make(Config(2));
  q->Observe({Sample(20, 2), Sample(20, 4)}, kT0);
  EXPECT_GT(q->Decide(kT0, 0).stages[0].replica_delta, 0);
  EXPECT_EQ(q->Decide(kT0 + absl::Seconds(1), 0).stages[0].replica_delta, 0);
  EXPECT_EQ(q->NextWakeup(), kT0 + absl::Seconds(2));
}

TEST(QuartScaler, ReclaimsSurplusAfterTheHold) {
  auto q = Make(Config(3));
  const std::vector<StageSample> in = {Sample(5, 1, 0.5), Sample(5, 8, 0.5), Sample(5, 1, 0.5)};
  q->Observe(in, kT0);
  EXPECT_EQ(q->Decide(kT0, 0).stages[1].replica_delta, 0);
  // Hold: 30 s plus twice stage 0's sojourn (~0.1 s) for a burst to travel down.
  q->Observe(in, kT0 + absl::Seconds(30));
  EXPECT_EQ(q->Decide(kT0 + absl::Seconds(30), 0).stages[1].replica_delta, 0);
  q->Observe(in, kT0 + absl::Seconds(31));
  const QuartDecision d = q->Decide(kT0 + absl::Seconds(31), 0);
  EXPECT_EQ(d.stages[1].replica_delta, -1);
  EXPECT_EQ(d.stages[0].replica_delta, 0);
}

TEST(QuartScaler, CpuCoversReplicasStillStarting) {
  QuartConfig c = Config(2);
  for (QuartStageSpec& s : c.stages)
    s.cpu.cpu_slowdown = 2.5;  // 0.25 s on CPU, under 0.3 s
  auto q = Make(c);
  std::vector<StageSample> in = {Sample(25, 2), Sample(5, 2)};
  in[0].starting_replicas = 2;  // asked for; not ready
  q->Observe(in, kT0);
  const QuartDecision d = q->Decide(kT0, 64);
  // 3 replicas meet the target; 1 short -> ceil(1 x 2.5) = 3 workers until the GPUs are ready.
  EXPECT_EQ(d.stages[0].cpu_worker_delta, 3);
  EXPECT_FALSE(d.stages[0].cpu_escalated);
  EXPECT_EQ(d.stages[1].cpu_worker_delta, 0);
  // Bound ceil(2 x 3) = 6 over 4 ready + starting, no probe while starting: at most 2.
  EXPECT_LE(d.stages[0].replica_delta, 2);
}

TEST(QuartScaler, NoCoresEscalatesToGpus) {
  auto q = Make(Config(1));
  StageSample s = Sample(25, 2);
  s.measured_latency = absl::Milliseconds(200);  // under target: the corrector stays quiet
  q->Observe({s}, kT0);
  const QuartDecision d = q->Decide(kT0, 0);
  // The model says 2 replicas leave the stage over target; with no cores the CPU cannot cover.
  EXPECT_TRUE(d.stages[0].cpu_escalated);
  EXPECT_GT(d.stages[0].replica_delta, 0);
}

TEST(QuartScaler, AbsurdSamplesStayBounded) {
  auto q = Make(Config(2));
  StageSample s = Sample(1e15, 3, INFINITY);
  s.queue_length = NAN;
  s.measured_latency = absl::InfiniteDuration();
  q->Observe({s, Sample(NAN, -4, -1)}, kT0);
  const QuartDecision d = q->Decide(kT0, 1 << 30);
  EXPECT_EQ(3 + d.stages[0].replica_delta, 16);  // to the cap, no overflow
  EXPECT_GE(d.stages[1].replica_delta, 1);       // negative replicas count as 0: up to min
}

TEST(QuartScaler, RejectsMismatchedSamples) {
  auto q = Make(Config(2));
  q->Observe({Sample(5, 1)}, kT0);
  EXPECT_EQ(q->rejected_samples(), 1);
  EXPECT_EQ(q->Decide(kT0, 0).stages[0].replica_delta, 0);
}

TEST(QuartScaler, ValidationNamesTheField) {
  QuartConfig c = Config(3);
  c.stages[1].service_rps = 0;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("stages[1].service_rps"),
            std::string::npos);
  c = Config(3);
  c.stages[2].latency_target = absl::Milliseconds(50);
  EXPECT_NE(QuartScaler::Create(c).status().message().find("stages[2].latency_target"),
            std::string::npos);
  c = Config(3);
  c.pid.kp = -1;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("pid.kp"), std::string::npos);
  c = Config(3);
  c.smoother.beta_min = 2;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("smoother.beta_min"), std::string::npos);
  c = Config(3);
  c.stages[1].cpu.cpu_slowdown = 0.5;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("stages[1].cpu.cpu_slowdown"),
            std::string::npos);
  c = Config(3);
  c.key.model_weight = -1;
  EXPECT_NE(QuartScaler::Create(c).status().message().find("key.model_weight"), std::string::npos);
  EXPECT_NE(QuartScaler::Create(QuartConfig{}).status().message().find("stages"),
            std::string::npos);
}

// With and without R_total and rebalance: every stage within its bounds, and with a budget the
// total never passes it unless what is already held (raised to min_replicas) does; then it never
// grows past that.
TEST(QuartScalerProperty, ReplicasStayWithinBounds) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const int n = 1 + static_cast<int>(rng() % 8);
    QuartConfig c = Config(n);
    if (seed % 3 != 0) {
      c.total_replicas = n + static_cast<int>(rng() % (8 * n));
      c.rebalance = seed % 3 == 1;
      c.rebalance_from_entry = seed % 2 == 0;
    }
    for (QuartStageSpec& s : c.stages) {
      s.min_replicas = static_cast<int>(rng() % 3);
      s.max_replicas = std::max(1, s.min_replicas) + static_cast<int>(rng() % 10);
    }
    auto q = Make(c);
    absl::Time now = kT0;
    for (int step = 0; step < 60; ++step) {
      std::vector<StageSample> in(n);
      for (StageSample& s : in) {
        s = Sample(200 * u(rng), static_cast<int>(rng() % 20), 8 * u(rng));
        s.starting_replicas = static_cast<int>(rng() % 3);
        s.queue_length = 50 * u(rng);
        s.measured_latency = absl::Milliseconds(3000 * u(rng));
        s.cpu_workers = static_cast<int>(rng() % 4);
      }
      q->Observe(in, now);
      const QuartDecision d = q->Decide(now, static_cast<int>(rng() % 64));
      int held = 0;
      int after_sum = 0;
      for (int i = 0; i < n; ++i) {
        held += std::max(in[i].ready_replicas + in[i].starting_replicas,
                         c.stages[i].min_replicas);
        after_sum += in[i].ready_replicas + in[i].starting_replicas + d.stages[i].replica_delta;
      }
      if (c.total_replicas > 0) {
        ASSERT_LE(after_sum, std::max(held, c.total_replicas)) << "seed " << seed;
      }
      for (int i = 0; i < n; ++i) {
        const int after =
            in[i].ready_replicas + in[i].starting_replicas + d.stages[i].replica_delta;
        ASSERT_GE(after, c.stages[i].min_replicas) << "seed " << seed << " stage " << i;
        ASSERT_LE(after, c.stages[i].max_replicas) << "seed " << seed << " stage " << i;
        ASSERT_GE(in[i].cpu_workers + d.stages[i].cpu_worker_delta, 0) << "seed " << seed;
        ASSERT_LE(in[i].cpu_workers + d.stages[i].cpu_worker_delta, c.stages[i].cpu.max_workers)
            << "seed " << seed;
      }
      now += absl::Seconds(1 + rng() % 20);
    }
  }
}

}  // namespace
}  // namespace sluice::core
