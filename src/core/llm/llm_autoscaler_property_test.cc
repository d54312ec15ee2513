// Property tests of LlmAutoscaler over seeded random configs and load traces: pools stay within
// [min, max], no scale-in happens before the load stayed low for the timeout, and a constant load
// (with KV usage that follows the pool size) never makes a pool oscillate.
#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "core/llm/llm_autoscaler.h"
#include "gtest/gtest.h"

namespace sluice::core::llm {
namespace {

absl::Time T(double s) { return absl::UnixEpoch() + absl::Seconds(s); }

LlmScalerConfig RandomConfig(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  LlmScalerConfig c;
  c.window = absl::Seconds(0.2 + 2 * u(rng));
  c.scale_down_timeout = absl::Seconds(4 * u(rng));
  c.prefill_tokens_per_s_per_instance = 500 + 5000 * u(rng);
  c.decode_tokens_per_s_per_instance = 50 + 500 * u(rng);
  c.kv_usage_upper = 0.5 + 0.5 * u(rng);
  c.lower_fraction = 0.05 + 0.9 * u(rng);
  c.min_prefill = static_cast<int>(3 * u(rng));
  c.max_prefill = c.min_prefill + 1 + static_cast<int>(20 * u(rng));
  c.min_decode = static_cast<int>(3 * u(rng));
  c.max_decode = c.min_decode + 1 + static_cast<int>(20 * u(rng));
  c.allow_mutation = u(rng) < 0.5;
  return c;
}

TEST(LlmAutoscalerPropertyTest, BoundsAndTimeoutHold) {
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const LlmScalerConfig c = RandomConfig(rng);
    LlmAutoscaler a(c);
    std::uniform_real_distribution<double> u(0, 1);
    int np = c.min_prefill, nd = c.min_decode;
    double t = 0;
    // The last time the windowed per-instance load was not below the lower bound.
    double prefill_high_at = 0;
    std::deque<std::pair<double, double>> window;  // (t, prefill load) as the scaler sees it
    for (int step = 0; step < 400; ++step) {
      t += 0.05 + 0.3 * u(rng);
      const double burst = u(rng) < 0.1 ? 20 : 1;
      LlmLoad l;
      l.now = T(t);
      l.prefill_tokens_per_s = burst * c.prefill_tokens_per_s_per_instance * 3 * u(rng);
      l.decode_tokens_per_s = burst * c.decode_tokens_per_s_per_instance * 3 * u(rng);
      l.kv_usage = std::min(1.0, u(rng) * (nd > 0 ? 2.0 / nd : 0));
      l.prefill_instances = np;
      l.decode_instances = nd;
      a.Observe(l);
      window.emplace_back(t, l.prefill_tokens_per_s);
      while (window.size() > 1 && window.front().first <= t - absl::ToDoubleSeconds(c.window))
        window.pop_front();
      double mean = 0;
      for (const auto& [wt, v] : window)
        mean += v / window.size();
      if (!(mean < c.lower_fraction * c.prefill_tokens_per_s_per_instance * np))
        prefill_high_at = t;
      const LlmScaleDecision d = a.Decide(T(t));
      if (d.prefill_delta < 0) {
        EXPECT_GE(t - prefill_high_at, absl::ToDoubleSeconds(c.scale_down_timeout) - 1e-9)
            << "seed " << seed << " step " << step;
      }
      np += d.prefill_delta - d.mutate_prefill_to_decode;
      nd += d.decode_delta + d.mutate_prefill_to_decode;
      ASSERT_GE(d.mutate_prefill_to_decode, 0);
      ASSERT_TRUE(c.allow_mutation || d.mutate_prefill_to_decode == 0) << "seed " << seed;
      ASSERT_GE(np, c.min_prefill) << "seed " << seed << " step " << step;
      ASSERT_LE(np, c.max_prefill) << "seed " << seed << " step " << step;
      ASSERT_GE(nd, c.min_decode) << "seed " << seed << " step " << step;
      ASSERT_LE(nd, c.max_decode) << "seed " << seed << " step " << step;
    }
  }
}

// Constant token rates and a constant total KV demand (usage = demand / instances): once a pool
// has moved in one direction it never moves back.
TEST(LlmAutoscalerPropertyTest, ConstantLoadDoesNotOscillate) {
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(1000 + seed);
    const LlmScalerConfig c = RandomConfig(rng);
    std::uniform_real_distribution<double> u(0, 1);
    const double prefill = c.prefill_tokens_per_s_per_instance * 10 * u(rng);
    const double decode = c.decode_tokens_per_s_per_instance * 10 * u(rng);
    const double kv_demand = 6 * u(rng);  // in instances' worth of KV memory
    int np = c.min_prefill + static_cast<int>((c.max_prefill - c.min_prefill) * u(rng));
    int nd = c.min_decode + static_cast<int>((c.max_decode - c.min_decode) * u(rng));
    LlmAutoscaler a(c);
    int prefill_dir = 0, decode_dir = 0;
    for (int step = 0; step < 300; ++step) {
      const double t = 0.1 * step;
      LlmLoad l;
      l.now = T(t);
      l.prefill_tokens_per_s = prefill;
      l.decode_tokens_per_s = decode;
      l.kv_usage = nd > 0 ? std::min(1.0, kv_demand / nd) : 0;
      l.prefill_instances = np;
      l.decode_instances = nd;
      a.Observe(l);
      const LlmScaleDecision d = a.Decide(T(t));
      const int dp = d.prefill_delta - d.mutate_prefill_to_decode;
      const int dd = d.decode_delta + d.mutate_prefill_to_decode;
      if (dp != 0) {
        const int dir = dp > 0 ? 1 : -1;
        ASSERT_TRUE(prefill_dir == 0 || prefill_dir == dir) << "seed " << seed << " t " << t;
        prefill_dir = dir;
      }
      if (dd != 0) {
        const int dir = dd > 0 ? 1 : -1;
        ASSERT_TRUE(decode_dir == 0 || decode_dir == dir) << "seed " << seed << " t " << t;
        decode_dir = dir;
      }
      np += dp;
      nd += dd;
    }
  }
}

}  // namespace
}  // namespace sluice::core::llm
