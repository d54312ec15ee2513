// Replay engine: hand-worked timelines, invariants over seeded synthetic lists (printing the
// seed), policy ordering on a fixture, caps, failed placements, determinism and bad input.
#include "sim/placement/replay.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/registry/policy_registry.h"
#include "sim/placement/synthetic_instances.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<core::PolicySet> Policy(const std::string& name,
                                        std::vector<core::PolicyParam> params = {}) {
  absl::StatusOr<std::unique_ptr<core::PolicySet>> p =
      core::MakePolicySet(name, params, "test.yaml");
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

core::ClusterSpec Cluster(int nodes, int gpus_per_node = 4) {
  core::NodeSpec node;
  node.gpu_count = gpus_per_node;
  node.gpu.memory = core::Bytes::GiB(40);
  return core::ClusterSpec::Uniform(nodes, node);
}

PlacementEvent Event(int t_s, InstanceAction action, const std::string& name,
                     core::FunctionKind kind = core::FunctionKind::kInference, int gpus = 1,
                     double request = 0.3, double limit = 0.5, double memory_gib = 5) {
  static int line = 0;
  return {
      absl::FromUnixSeconds(t_s), action, {name, kind, gpus, request, limit, memory_gib}, ++line};
}

ReplayResult Replay(const std::vector<PlacementEvent>& events, const std::string& policy,
                    const core::ClusterSpec& cluster, bool timeline = false) {
  std::unique_ptr<core::PolicySet> set = Policy(policy);
  absl::StatusOr<ReplayResult> r = ReplayPlacement(events, cluster, *set, {timeline});
  EXPECT_TRUE(r.ok()) << policy << ": " << r.status();
  return r.ok() ? *r : ReplayResult{};
}

using enum InstanceAction;

// a on [0, 100), b on [50, 100): exclusive holds 1 GPU for 50 s, then 2 for 50 s.
TEST(ReplayTest, TimeWeightedMeanPeakAndFinalByHand) {
  const std::vector<PlacementEvent> events = {
      Event(0, kStart, "a", core::FunctionKind::kInference, 1, 0.3), Event(50, kStart, "b"),
      Event(100, kDelete, "a"), Event(100, kDelete, "b")};
  const ReplayResult r = Replay(events, "exclusive", Cluster(2), true);
  EXPECT_EQ(r.starts, 2);
  EXPECT_EQ(r.deletes, 2);
  EXPECT_EQ(r.peak_active_gpus, 2);
  EXPECT_EQ(r.peak_at, absl::Seconds(50));
  EXPECT_DOUBLE_EQ(r.mean_active_gpus, 1.5);
  EXPECT_EQ(r.final_active_gpus, 0);
  EXPECT_EQ(r.span, absl::Seconds(100));
  EXPECT_EQ(r.failed_placements, 0);
  // Exclusive grants whole GPUs: nothing left to allocate (0) but 0.7 of the SMs unrequested;
  // 35 of 40 GiB free.
  EXPECT_DOUBLE_EQ(r.sm_fragmentation, 0.0);
  EXPECT_NEAR(r.sm_unrequested, 0.7, 1e-9);
  EXPECT_NEAR(r.mem_fragmentation, 35.0 / 40.0, 1e-9);
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_EQ(r.timeline[0].active_gpus, 1);
  EXPECT_EQ(r.timeline[1].active_gpus, 2);
  EXPECT_EQ(r.timeline[1].at, absl::Seconds(50));
  EXPECT_EQ(r.timeline[2].active_gpus, 0);
}

// The same two instances share one GPU under a request-based static share.
TEST(ReplayTest, SharingPoliciesPackOntoOneGpu) {
  const std::vector<PlacementEvent> events = {Event(0, kStart, "a"), Event(50, kStart, "b"),
                                              Event(100, kDelete, "a")};
  for (const char* policy : {"infless-r", "infless-l", "dilu", "mps-r"}) {
    const ReplayResult r = Replay(events, policy, Cluster(2));
    EXPECT_EQ(r.peak_active_gpus, 1) << policy;
    EXPECT_EQ(r.final_active_gpus, 1) << policy;
  }
  const ReplayResult r = Replay(events, "infless-r", Cluster(2));
  EXPECT_NEAR(r.sm_fragmentation, 0.5 * 0.7 + 0.5 * 0.4, 1e-9);  // request 0.3, then 0.6
  EXPECT_NEAR(r.sm_fragmentation_at_peak, 0.7, 1e-9);            // first reached with a alone
}

TEST(ReplayTest, FailedPlacementIsCountedAndItsDeleteSkipped) {
  const std::vector<PlacementEvent> events = {
      Event(0, kStart, "a"), Event(1, kStart, "b"), Event(2, kDelete, "b"),
      Event(3, kStart, "c", core::FunctionKind::kTraining, 2, 0.5, 0.7, 30)};
  const ReplayResult r = Replay(events, "exclusive", Cluster(1, 1));
  EXPECT_EQ(r.starts, 3);
  EXPECT_EQ(r.failed_placements, 2);
  EXPECT_EQ(r.deletes, 0);
  EXPECT_THAT(r.first_failure, HasSubstr(": b: "));
  EXPECT_EQ(r.final_active_gpus, 1);
}

TEST(ReplayTest, BadEventOrderOrIdentityIsAnError) {
  std::unique_ptr<core::PolicySet> set = Policy("exclusive");
  const std::vector<std::vector<PlacementEvent>> bad = {
      {Event(5, kStart, "a"), Event(1, kStart, "b")},
      {Event(0, kDelete, "a")},
      {Event(0, kStart, "a"), Event(1, kStart, "a")},
  };
  for (const auto& events : bad) {
    absl::StatusOr<ReplayResult> r = ReplayPlacement(events, Cluster(2), *set);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  absl::StatusOr<ReplayResult> empty = ReplayPlacement({}, Cluster(2), *set);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->peak_active_gpus, 0);
}

// Exclusive gives every instance its own GPUs, so its peak is the most GPUs demanded at once.
int MaxConcurrentGpus(const std::vector<PlacementEvent>& events) {
  int now = 0, peak = 0;
  for (const PlacementEvent& e : events) {
    now += (e.action == kStart ? 1 : -1) * e.instance.gpus;
    peak = std::max(peak, now);
  }
  return peak;
}

// Deletes for every instance still live at the end, one second after the last event.
void DeleteAll(std::vector<PlacementEvent>& events) {
  std::map<std::string, PlacementEvent> live;
  for (const PlacementEvent& e : events) {
    if (e.action == kStart)
      live[e.instance.service_name] = e;
    if (e.action == kDelete)
      live.erase(e.instance.service_name);
  }
  const absl::Time end = events.back().time + absl::Seconds(1);
  for (auto& [name, e] : live) {
    e.action = kDelete;
    e.time = end;
    events.push_back(e);
  }
}

TEST(ReplayTest, InvariantsOverSeededSyntheticLists) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    absl::StatusOr<std::vector<PlacementEvent>> events = GenerateSyntheticInstances({200, seed});
    ASSERT_TRUE(events.ok());
    DeleteAll(*events);
    std::map<std::string, int> peak;
    for (const char* policy : {"exclusive", "infless-l", "infless-r", "dilu"}) {
      const ReplayResult r = Replay(*events, policy, Cluster(100), true);
      peak[policy] = r.peak_active_gpus;
      EXPECT_EQ(r.failed_placements, 0) << policy;
      EXPECT_EQ(r.final_active_gpus, 0) << policy;  // everything deleted: the cluster is empty
      EXPECT_EQ(r.deletes, r.starts) << policy;
      EXPECT_LE(r.max_gpu_request_sum, 1.0 + 1e-9) << policy;
      EXPECT_LE(r.mean_active_gpus, r.peak_active_gpus) << policy;
      for (const TimelinePoint& p : r.timeline) {
        EXPECT_GE(p.active_gpus, 0) << policy;
        EXPECT_LE(p.active_gpus, r.peak_active_gpus) << policy;
        EXPECT_TRUE(p.sm_fragmentation >= 0 && p.sm_fragmentation <= 1) << policy;
        EXPECT_TRUE(p.mem_fragmentation >= 0 && p.mem_fragmentation <= 1) << policy;
      }
    }
    EXPECT_EQ(peak["exclusive"], MaxConcurrentGpus(*events));
    EXPECT_GE(peak["exclusive"], peak["infless-l"]);
    EXPECT_GE(peak["infless-l"], peak["infless-r"]);
    EXPECT_GE(peak["infless-l"], peak["dilu"]);
  }
}

TEST(ReplayTest, DiluRespectsGammaAndOversubscriptionHelps) {
  absl::StatusOr<std::vector<PlacementEvent>> events = GenerateSyntheticInstances({400, 3});
  ASSERT_TRUE(events.ok());
  std::map<std::string, int> peak;
  for (const char* gamma : {"1.0", "1.5", "2.0"}) {
    std::unique_ptr<core::PolicySet> set = Policy("dilu", {{"gamma", gamma, 1}});
    absl::StatusOr<ReplayResult> r = ReplayPlacement(*events, Cluster(200), *set);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(r->max_gpu_limit_sum, std::stod(gamma) + 1e-9) << gamma;
    EXPECT_LE(r->max_gpu_request_sum, 1.0 + 1e-9) << gamma;
    peak[gamma] = r->peak_active_gpus;
  }
  EXPECT_GT(peak["1.0"], peak["1.5"]);  // gamma = 1 caps the limits like a limit-based share
}

TEST(ReplayTest, TrainingWorkersStayOnOneNode) {
  const std::vector<PlacementEvent> events = {
      Event(0, kStart, "t1", core::FunctionKind::kTraining, 4, 0.5, 0.7, 30),
      Event(1, kStart, "t2", core::FunctionKind::kTraining, 2, 0.4, 0.6, 25),
      Event(2, kStart, "i1")};
  for (const char* policy : {"exclusive", "infless-l", "infless-r", "dilu"}) {
    const ReplayResult r = Replay(events, policy, Cluster(3));
    EXPECT_EQ(r.failed_placements, 0) << policy;
    EXPECT_GE(r.peak_active_gpus, 4) << policy;
  }
}

TEST(ReplayTest, SameInputSameResult) {
  absl::StatusOr<std::vector<PlacementEvent>> events = GenerateSyntheticInstances({300, 9});
  ASSERT_TRUE(events.ok());
  for (const char* policy : {"exclusive", "infless-l", "dilu"}) {
    const ReplayResult a = Replay(*events, policy, Cluster(150), true);
    const ReplayResult b = Replay(*events, policy, Cluster(150), true);
    EXPECT_EQ(a.peak_active_gpus, b.peak_active_gpus) << policy;
    EXPECT_EQ(a.mean_active_gpus, b.mean_active_gpus) << policy;
    EXPECT_EQ(a.sm_fragmentation, b.sm_fragmentation) << policy;
    ASSERT_EQ(a.timeline.size(), b.timeline.size()) << policy;
    for (size_t i = 0; i < a.timeline.size(); ++i) {
      EXPECT_EQ(a.timeline[i].active_gpus, b.timeline[i].active_gpus) << policy << " " << i;
    }
  }
}

}  // namespace
}  // namespace sluice::sim
