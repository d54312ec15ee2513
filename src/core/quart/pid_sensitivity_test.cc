// PID gain sensitivity (docs/quart.md, "Corrector"): one stage driven through a deterministic
// fluid plant under a 3x load step, for QuartScaler with the default gains and with each gain
// varied alone, bare PID and model-bounded, and the bound factor swept. Prints the table the doc
// copies; asserts the properties that justify the defaults.
#include <cmath>
#include <cstdio>

#include "gtest/gtest.h"

#include "core/quart/quart_scaler.h"

namespace sluice::core {
namespace {

struct Outcome {
  double mean_latency_ms = 0;
  int seconds_over_target = 0;
  double replica_seconds = 0;
  int peak_replicas = 0;
};

// The plant: profiled mu 10 rps per replica, true mu 8 (the profile is 20 % optimistic, so the
// model alone under-sizes and the feedback has to make up the rest); load 40 rps, 120 rps from
// t = 60 s to 180 s, then 40 rps; a started replica serves 3 s later (host-cache start); fluid
// queue, 1 s steps, 300 s. Latency = queue / capacity + 1 / mu_true.
Outcome RunPlant(const PidConfig& pid, double bound_factor, double mu_true = 8) {
  QuartConfig c;
  QuartStageSpec s;
  s.service_rps = 10;
  s.max_replicas = 64;
  s.latency_target = absl::Milliseconds(300);
  c.stages = {s};
  c.pid = pid;
  c.correction_bound_factor = bound_factor;
  auto q = QuartScaler::Create(c);
  EXPECT_TRUE(q.ok()) << q.status();
  const absl::Time t0 = absl::FromUnixSeconds(0);
  int ready = 6;
  std::vector<int> ready_at;  // start times + 3 s of replicas not yet serving
  double queue = 0;
  Outcome o;
  for (int t = 0; t < 300; ++t) {
    const double lambda = t >= 60 && t < 180 ? 120 : 40;
    for (auto it = ready_at.begin(); it != ready_at.end();) {
      if (*it <= t) {
        ++ready;
        it = ready_at.erase(it);
      } else {
        ++it;
      }
    }
    const double capacity = ready * mu_true;
    queue = std::max(0.0, queue + lambda - capacity);
    const double latency_s = queue / capacity + 1.0 / mu_true;
    o.mean_latency_ms += 1000 * latency_s / 300;
    if (latency_s > 0.3)
      ++o.seconds_over_target;
    o.replica_seconds += ready + static_cast<double>(ready_at.size());
    o.peak_replicas = std::max(o.peak_replicas, ready + static_cast<int>(ready_at.size()));
    StageSample sample;
    sample.arrival_rps = lambda;
    sample.arrival_cv = 1.0;
    sample.queue_length = queue;
    sample.measured_latency = absl::Seconds(latency_s);
    sample.ready_replicas = ready;
    sample.starting_replicas = static_cast<int>(ready_at.size());
    (*q)->Observe({sample}, t0 + absl::Seconds(t));
    const int delta = (*q)->Decide(t0 + absl::Seconds(t), 0).stages[0].replica_delta;
    for (int k = 0; k < delta; ++k)
      ready_at.push_back(t + 3);
    ready += std::min(0, delta);
  }
  return o;
}

std::vector<PidConfig> Gains() {
  std::vector<PidConfig> rows = {PidConfig{}};
  for (double kp : {0.5, 1.0, 4.0, 8.0})
    rows.push_back({kp, 0.3, 0.1});
  for (double ki : {0.0, 1.0, 3.0})
    rows.push_back({2.0, ki, 0.1});
  for (double kd : {0.0, 1.0, 3.0})
    rows.push_back({2.0, 0.3, kd});
  return rows;
}

// Prints one table (profile optimistic by mu_true / 10) and returns {bound 2.0, bare} outcomes.
std::pair<std::vector<Outcome>, std::vector<Outcome>> PrintTable(double mu_true) {
  std::printf(
      "true mu %.0f rps (profile 10)\n| gains | bound 2.0: mean ms | s over | replica-s "
      "| peak | bare PID: mean ms | s over | replica-s | peak |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      mu_true);
  std::vector<Outcome> bounded, bare;
  for (const PidConfig& g : Gains()) {
    bounded.push_back(RunPlant(g, 2.0, mu_true));
    bare.push_back(RunPlant(g, 0, mu_true));
    const Outcome& a = bounded.back();
    const Outcome& b = bare.back();
    std::printf("| kp %.1f ki %.1f kd %.1f | %.0f | %d | %.0f | %d | %.0f | %d | %.0f | %d |\n",
                g.kp, g.ki, g.kd, a.mean_latency_ms, a.seconds_over_target, a.replica_seconds,
                a.peak_replicas, b.mean_latency_ms, b.seconds_over_target, b.replica_seconds,
                b.peak_replicas);
  }
  return {bounded, bare};
}

TEST(PidSensitivity, Table) {
  const auto [bounded, bare] = PrintTable(8);
  PrintTable(5);
  std::printf(
      "| bound factor (default gains) | true mu 8: mean ms | s over | replica-s | "
      "true mu 5: mean ms | s over | replica-s |\n|---|---|---|---|---|---|---|\n");
  for (double f : {1.0, 1.5, 2.0, 3.0, 0.0}) {
    const Outcome a = RunPlant(PidConfig{}, f, 8);
    const Outcome b = RunPlant(PidConfig{}, f, 5);
    std::printf("| %.1f | %.0f | %d | %.0f | %.0f | %d | %.0f |\n", f, a.mean_latency_ms,
                a.seconds_over_target, a.replica_seconds, b.mean_latency_ms, b.seconds_over_target,
                b.replica_seconds);
  }
  const Outcome tight = RunPlant(PidConfig{}, 1.0);
  // The defaults recover from the step (some seconds over target, not most of the burst)...
  EXPECT_LT(bounded[0].seconds_over_target, 30);
  // ... the bound costs fewer replica-seconds than the bare PID with the same gains ...
  EXPECT_LE(bounded[0].replica_seconds, bare[0].replica_seconds);
  // ... and a bound at the need itself is slower to recover than 2.0.
  EXPECT_GE(tight.seconds_over_target, bounded[0].seconds_over_target);
}

}  // namespace
}  // namespace sluice::core
