// ParseDiluConfig (defaults, every key, strict errors naming file, line and key) and the
// DiluComponents factory (scaler bounds, -VS controller, work-conserving flag).
#include "core/dilu/dilu_policy.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

std::vector<PolicyParam> Params(std::vector<std::pair<std::string, std::string>> kv) {
  std::vector<PolicyParam> out;
  int line = 10;
  for (auto& [k, v] : kv) out.push_back({k, v, line++});
  return out;
}

TEST(DiluPolicyTest, DefaultsAreThePapers) {
  auto c = ParseDiluConfig({}, "exp.yaml");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->scheduler.omega, 1.0);
  EXPECT_DOUBLE_EQ(c->scheduler.gamma, 1.5);
  EXPECT_DOUBLE_EQ(c->scheduler.alpha, 0.5);
  EXPECT_EQ(c->vertical.period, absl::Milliseconds(5));
  EXPECT_DOUBLE_EQ(c->vertical.eta_violation, 0.6);
  EXPECT_DOUBLE_EQ(c->vertical.eta_violation_llm, 0.3);
  EXPECT_DOUBLE_EQ(c->vertical.eta_increase, 1.3);
  EXPECT_EQ(c->scaler.window, absl::Seconds(40));
  EXPECT_EQ(c->scaler.phi_out, 20);
  EXPECT_EQ(c->scaler.phi_in, 30);
  EXPECT_EQ(c->scaler.min_instances, 1);
  EXPECT_DOUBLE_EQ(c->profiler.request_fraction, 0.8);
  EXPECT_TRUE(c->vertical_scaling && c->scheduler.resource_complementarity &&
              c->scheduler.workload_affinity);
}

TEST(DiluPolicyTest, EveryKeyReachesItsField) {
  auto c = ParseDiluConfig(Params({{"alpha", "0.6"},
                                   {"beta", "0.4"},
                                   {"omega", "1.2"},
                                   {"gamma", "2"},
                                   {"node_candidates", "8"},
                                   {"affinity", "partner_workers"},
                                   {"resource_complementarity", "false"},
                                   {"workload_affinity", "no"},
                                   {"vertical_scaling", "off"},
                                   {"period_ms", "2.5"},
                                   {"eta_violation", "0.7"},
                                   {"eta_violation_llm", "0.35"},
                                   {"eta_increase", "1.5"},
                                   {"eta_recover", "0.1"},
                                   {"recovery_every", "1"},
                                   {"rate_window", "40"},
                                   {"min_klc_periods", "3"},
                                   {"klc_span_periods", "4"},
                                   {"klc_min_window", "0"},
                                   {"token_floor", "0.02"},
                                   {"work_conserving", "0"},
                                   {"window_s", "60"},
                                   {"phi_out", "25"},
                                   {"phi_in", "35"},
                                   {"min_instances", "0"},
                                   {"max_instances", "7"},
                                   {"reset_window", "true"},
                                   {"p_request", "0.7"},
                                   {"p_limit", "0.95"},
                                   {"tolerance", "0.05"},
                                   {"sm_unit", "0.05"},
                                   {"sm_step", "0.2"},
                                   {"max_batch", "16"},
                                   {"slo_fraction", "0.4"},
                                   {"limit_factor", "1.5"},
                                   {"te_tolerance", "0"}}),
                           "exp.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->scheduler.alpha, 0.6);
  EXPECT_DOUBLE_EQ(c->scheduler.beta, 0.4);
  EXPECT_DOUBLE_EQ(c->scheduler.omega, 1.2);
  EXPECT_DOUBLE_EQ(c->scheduler.gamma, 2);
  EXPECT_EQ(c->scheduler.node_candidates, 8);
  EXPECT_EQ(c->scheduler.affinity, AffinityKind::kPartnerWorkers);
  EXPECT_FALSE(c->scheduler.resource_complementarity);
  EXPECT_FALSE(c->scheduler.workload_affinity);
  EXPECT_FALSE(c->vertical_scaling);
  EXPECT_EQ(c->vertical.period, absl::Microseconds(2500));
  EXPECT_DOUBLE_EQ(c->vertical.eta_violation, 0.7);
  EXPECT_DOUBLE_EQ(c->vertical.eta_violation_llm, 0.35);
  EXPECT_DOUBLE_EQ(c->vertical.eta_increase, 1.5);
  EXPECT_DOUBLE_EQ(c->vertical.eta_recover, 0.1);
  EXPECT_EQ(c->vertical.recovery_every, 1);
  EXPECT_EQ(c->vertical.rate_window, 40);
  EXPECT_EQ(c->vertical.min_klc_periods, 3);
  EXPECT_EQ(c->vertical.klc_span_periods, 4);
  EXPECT_EQ(c->vertical.klc_min_window, 0);
  EXPECT_DOUBLE_EQ(c->vertical.token_floor, 0.02);
  EXPECT_FALSE(c->vertical.work_conserving);
  EXPECT_EQ(c->scaler.window, absl::Seconds(60));
  EXPECT_EQ(c->scaler.phi_out, 25);
  EXPECT_EQ(c->scaler.phi_in, 35);
  EXPECT_EQ(c->scaler.min_instances, 0);
  EXPECT_EQ(c->scaler.max_instances, 7);
  EXPECT_TRUE(c->scaler.reset_window_on_scale);
  EXPECT_DOUBLE_EQ(c->profiler.request_fraction, 0.7);
  EXPECT_DOUBLE_EQ(c->profiler.limit_fraction, 0.95);
  EXPECT_DOUBLE_EQ(c->profiler.tolerance, 0.05);
  EXPECT_DOUBLE_EQ(c->profiler.sm_unit, 0.05);
  EXPECT_DOUBLE_EQ(c->profiler.sm_step, 0.2);
  EXPECT_EQ(c->profiler.max_batch, 16);
  EXPECT_DOUBLE_EQ(c->profiler.slo_fraction, 0.4);
  EXPECT_DOUBLE_EQ(c->profiler.limit_factor, 1.5);
  EXPECT_DOUBLE_EQ(c->profiler.te_tolerance, 0);
}

void ExpectError(std::vector<std::pair<std::string, std::string>> kv, const std::string& needle) {
  auto c = ParseDiluConfig(Params(std::move(kv)), "exp.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status();
}

TEST(DiluPolicyTest, StrictErrorsNameFileLineAndKey) {
  ExpectError({{"omega", "1"}, {"gama", "1.5"}}, "exp.yaml:11: field 'gama': unknown");
  ExpectError({{"omega", "abc"}}, "exp.yaml:10: field 'omega': 'abc' is not a number");
  ExpectError({{"omega", "0"}}, "field 'omega': must be in (0,");
  ExpectError({{"phi_out", "2.5"}}, "field 'phi_out': '2.5' is not an integer");
  ExpectError({{"min_instances", "-1"}}, "field 'min_instances': must be in [0,");
  ExpectError({{"vertical_scaling", "maybe"}}, "'maybe' is not a boolean");
  ExpectError({{"affinity", "random"}}, "field 'affinity'");
  ExpectError({{"alpha", "0.3"}, {"alpha", "0.4"}}, "exp.yaml:11: field 'alpha': given twice");
  ExpectError({{"eta_increase", "0.9"}}, "field 'eta_increase'");
  ExpectError({{"period_ms", "inf"}}, "field 'period_ms'");
  // Cross-field checks name the later of the two keys.
  ExpectError({{"gamma", "0.8"}}, "exp.yaml:10: field 'gamma': gamma must be >= omega");
  ExpectError({{"gamma", "1.2"}, {"omega", "1.3"}}, "exp.yaml:11: field 'omega'");
  ExpectError({{"min_instances", "3"}, {"max_instances", "2"}}, "field 'max_instances'");
  ExpectError({{"alpha", "0"}, {"beta", "0"}}, "field 'beta': alpha + beta");
  ExpectError({{"p_request", "0.9"}, {"p_limit", "0.8"}}, "field 'p_limit'");
  ExpectError({{"sm_step", "0.005"}}, "field 'sm_step'");
  ExpectError({{"eta_recover", "0.5"}}, "field 'eta_recover'");
}

TEST(DiluPolicyTest, ComponentsBuildEachPart) {
  auto parts = MakeDiluComponents({}, "exp.yaml");
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->MakeScheduler()->name(), "dilu");
  EXPECT_EQ(parts->MakeController()->name(), "dilu");
  EXPECT_EQ(parts->MakeController()->period(), absl::Milliseconds(5));
  EXPECT_TRUE(parts->work_conserving());
  EXPECT_EQ(parts->QuotaFor({0.3, 0.6}), (SmQuota{0.3, 0.6}));
  // Bounds: max(policy min 1, function min 0) = 1; the function's max applies.
  auto scaler = parts->MakeScaler(10, 0, 2);
  for (int t = 0; t < 40; ++t) {
    scaler->Observe({absl::UnixEpoch() + absl::Seconds(t), 100, 2, 0, 0});  // capacity from config
  }
  EXPECT_EQ(scaler->Desired(absl::UnixEpoch()), 2);
  for (int t = 40; t < 80; ++t) {
    scaler->Observe({absl::UnixEpoch() + absl::Seconds(t), 0, 1, 0, 0});
  }
  EXPECT_EQ(scaler->Desired(absl::UnixEpoch()), 1);
  auto vs_off = MakeDiluComponents(Params({{"vertical_scaling", "false"}}), "exp.yaml");
  ASSERT_TRUE(vs_off.ok());
  EXPECT_EQ(vs_off->MakeController()->name(), "dilu-static");
  EXPECT_FALSE(vs_off->work_conserving());
  DiluConfig bad;
  bad.vertical.rate_window = 0;
  EXPECT_FALSE(DiluComponents::Create(bad).ok());
}

}  // namespace
}  // namespace sluice::core
