// Unit tests for CPU compensation.
#include "core/quart/cpu_compensator.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

CpuCompensator Make(std::vector<CpuStageProfile> p, CpuCompensatorConfig c = {}) {
  auto s = CpuCompensator::Create(c, std::move(p));
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

// A stage of mu 10 rps per replica with a 1 s target: CPU workers at slowdown 4 take 0.4 s.
CpuStageView View(double lambda, int ready, int workers = 0) {
  CpuStageView v;
  v.arrival_rps = lambda;
  v.service_rps = 10;
  v.ready_replicas = ready;
  v.cpu_workers = workers;
  v.target = absl::Seconds(1);
  return v;
}

TEST(CpuCompensator, CoversAShortfallWithWorkers) {
  CpuCompensator c = Make({{4.0, 2, 8}});
  // lambda 25 needs 3 GPU replicas; 2 are ready: 1 short -> 4 workers at slowdown 4.
  const auto a = c.Decide({View(25, 2)}, 64, kT0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].worker_delta, 4);
  EXPECT_FALSE(a[0].escalate);
  EXPECT_EQ(c.state(0), CpuCompensationState::kCompensating);
  EXPECT_EQ(c.NextWakeup(), kT0 + absl::Seconds(60));
}

TEST(CpuCompensator, HandsBackWhenGpusSuffice) {
  CpuCompensator c = Make({{4.0, 2, 8}});
  c.Decide({View(25, 2)}, 64, kT0);
  const auto a = c.Decide({View(25, 3, 4)}, 56, kT0 + absl::Seconds(5));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].worker_delta, -4);
  EXPECT_EQ(c.state(0), CpuCompensationState::kIdle);
}

TEST(CpuCompensator, ExpiresAndEscalatesWithoutFlapping) {
  CpuCompensator c = Make({{4.0, 2, 8}});
  c.Decide({View(25, 2)}, 64, kT0);
  auto a = c.Decide({View(25, 2, 4)}, 56, kT0 + absl::Seconds(60));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].worker_delta, -4);
  EXPECT_TRUE(a[0].escalate);
  EXPECT_EQ(a[0].gpu_replicas_short, 1);
  a = c.Decide({View(25, 2, 0)}, 64, kT0 + absl::Seconds(61));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].worker_delta, 0);  // exhausted: no restart while still short
  EXPECT_TRUE(a[0].escalate);
  EXPECT_TRUE(c.Decide({View(25, 3, 0)}, 64, kT0 + absl::Seconds(70)).empty());
  EXPECT_EQ(c.state(0), CpuCompensationState::kIdle);
}

TEST(CpuCompensator, BoundedByFreeCoresAndMaxWorkers) {
  CpuCompensator c = Make({{4.0, 2, 8}, {4.0, 2, 8}});
  // Each stage is 2 short (8 workers, 16 cores); 20 free cores: stage 0 gets 8, stage 1 gets 2.
  const auto a = c.Decide({View(35, 2), View(35, 2)}, 20, kT0);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].worker_delta, 8);
  EXPECT_FALSE(a[0].escalate);
  EXPECT_EQ(a[1].worker_delta, 2);
  EXPECT_TRUE(a[1].escalate);
}

TEST(CpuCompensator, TooSlowCpuEscalatesAtOnce) {
  CpuCompensator c = Make({{20.0, 2, 8}});  // 2 s on CPU > the 1 s target
  const auto a = c.Decide({View(25, 2)}, 64, kT0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].worker_delta, 0);
  EXPECT_TRUE(a[0].escalate);
  EXPECT_EQ(c.state(0), CpuCompensationState::kIdle);
}

TEST(CpuCompensator, ValidationNamesTheField) {
  auto bad = CpuCompensator::Create({}, {{0.5, 2, 8}});
  EXPECT_NE(bad.status().message().find("profiles[0].cpu_slowdown"), std::string::npos);
  bad = CpuCompensator::Create({}, {{2.0, 2, 8}, {2.0, 0, 8}});
  EXPECT_NE(bad.status().message().find("profiles[1].cores_per_worker"), std::string::npos);
  CpuCompensatorConfig c;
  c.max_duration = absl::InfiniteDuration();
  EXPECT_NE(CpuCompensator::Create(c, {}).status().message().find("max_duration"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::core
