// Every registered policy set: builds with default params, rejects unknown keys naming line and
// key, places a random stream without over-committing; and the specifics of fast-gs+, infless*,
// tgs and dilu (quota rules, parts, params reaching them, ablation switches).
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/baselines/histogram_scaler.h"
#include "core/baselines/priority_rate_controller.h"
#include "core/baselines/testing/commit.h"
#include "core/dilu/scheduler.h"
#include "core/registry/policy_registry.h"

namespace sluice::core {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<PolicySet> Make(std::string_view name, std::vector<PolicyParam> params = {}) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_TRUE(s.ok()) << name << ": " << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::string MakeError(std::string_view name, std::vector<PolicyParam> params) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_FALSE(s.ok()) << name;
  return s.ok() ? "" : std::string(s.status().message());
}

FunctionTraits Traits(FunctionKind kind = FunctionKind::kInference) {
  FunctionTraits f;
  f.kind = kind;
  f.profiled = {0.3, 0.6};
  f.capacity_rps = 100;
  f.slo_sensitive = kind != FunctionKind::kTraining;
  return f;
}

const absl::Time kT0 = absl::UnixEpoch();

TEST(PolicySetsTest, KnowsEveryPaperPolicy) {
  const std::vector<std::string> known = KnownPolicies();
  for (const char* name : {"dilu", "exclusive", "fast-gs+", "infless+", "infless-l", "infless-r",
                           "mps-l", "mps-r", "tgs"}) {
    EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << name;
  }
}

TEST(PolicySetsTest, EveryKnownPolicyBuildsWithDefaultsAndRejectsUnknownKeys) {
  for (const std::string& name : KnownPolicies()) {
    if (name.rfind("test-", 0) == 0)
      continue;  // entries other tests register
    auto set = Make(name);
    ASSERT_NE(set, nullptr) << name;
    EXPECT_EQ(set->name(), name);
    EXPECT_FALSE(set->placement().name().empty());
    for (FunctionKind k : {FunctionKind::kInference, FunctionKind::kTraining}) {
      const SmQuota q = set->QuotaFor(Traits(k));
      EXPECT_TRUE(ValidateQuota(q).ok()) << name << " " << q.request << "/" << q.limit;
    }
    EXPECT_NE(set->MakeScaler(Traits()), nullptr) << name;
    auto ctl = set->MakeVerticalController(GpuId(0));
    ASSERT_NE(ctl, nullptr) << name;
    EXPECT_GT(ctl->period(), absl::ZeroDuration()) << name;

    const std::string err = MakeError(name, {{"no_such_knob", "1", 42}});
    EXPECT_THAT(err, HasSubstr("exp.yaml:42")) << name;
    EXPECT_THAT(err, HasSubstr("'no_such_knob'")) << name;
    EXPECT_THAT(err, HasSubstr("unknown")) << name;
  }
}

// Random arrivals and departures through each policy's own placement, committed the way the
// simulator does: memory is never over-committed and each placement returns distinct GPUs.
TEST(PolicySetsPropertyTest, EveryPolicyPlacesWithoutOvercommitting) {
  for (const std::string& name : KnownPolicies()) {
    if (name.rfind("test-", 0) == 0)
      continue;
    for (uint32_t seed = 1; seed <= 5; ++seed) {
      std::mt19937 rng(seed);
      auto set = Make(name);
      ClusterState c(ClusterSpec::Uniform(4, NodeSpec{}));
      std::vector<InstanceId> live;
      for (int i = 0; i < 200; ++i) {
        if (!live.empty() && rng() % 3 == 0) {
          const size_t k = rng() % live.size();
          RemoveAndNotify(set->placement(), c, live[k]);
          live.erase(live.begin() + k);
          continue;
        }
        FunctionTraits f = Traits();
        f.profiled.request = 0.1 * (1 + rng() % 4);
        f.profiled.limit = std::min(1.0, 2 * f.profiled.request);
        InstanceDemand d;
        d.function = FunctionId(rng() % 5);
        d.instance = InstanceId(i);
        d.gpus = rng() % 8 == 0 ? 2 : 1;
        d.same_node = d.gpus > 1;
        d.memory_per_gpu = Bytes::GiB(1 + rng() % 12);
        d.quota = set->QuotaFor(f);
        auto gpus = PlaceAndCommit(set->placement(), c, d);
        if (gpus.ok()) {
          ASSERT_EQ(static_cast<int>(gpus->size()), d.gpus) << name << " seed " << seed;
          live.push_back(d.instance);
        } else {
          ASSERT_TRUE(absl::IsResourceExhausted(gpus.status())) << name << ": " << gpus.status();
        }
      }
      for (const GpuState& g : c.gpus()) {
        ASSERT_LE(g.memory_used.count(), g.spec.memory.count()) << name << " seed " << seed;
      }
    }
  }
}

TEST(PolicySetsTest, FastGsStaticLimitTimesTimeQuotaEagerScaling) {
  auto set = Make("fast-gs+", {{"time_quota", "0.5", 3}});
  EXPECT_EQ(set->QuotaFor(Traits()), (SmQuota{0.3, 0.3}));  // limit 0.6 x 0.5
  EXPECT_EQ(set->QuotaFor(Traits(FunctionKind::kTraining)), (SmQuota{0.6, 0.6}));
  EXPECT_EQ(Make("fast-gs+")->QuotaFor(Traits()), (SmQuota{0.6, 0.6}));
  EXPECT_FALSE(set->work_conserving());
  EXPECT_EQ(set->MakeVerticalController(GpuId(0))->period(), absl::InfiniteDuration());

  auto scaler = set->MakeScaler(Traits());  // 100 rps per instance, min 1, keep-alive 10 s
  EXPECT_EQ(scaler->Desired(kT0), 1);
  scaler->Observe({kT0, 80, 1, 100, 0});
  EXPECT_EQ(scaler->Desired(kT0), 1);
  scaler->Observe({kT0 + absl::Seconds(1), 101, 1, 100, 0});  // first overloaded sample
  EXPECT_EQ(scaler->Desired(kT0 + absl::Seconds(1)), 2);
  scaler->Observe({kT0 + absl::Seconds(2), 10, 2, 100, 0});
  EXPECT_EQ(scaler->Desired(kT0 + absl::Seconds(10.9)), 2);
  EXPECT_EQ(scaler->Desired(kT0 + absl::Seconds(11)), 1);  // 10 s after its last need

  auto zero = Make("fast-gs+", {{"min_instances", "0", 2}, {"keep_alive_s", "0", 3}});
  auto s0 = zero->MakeScaler(Traits());
  EXPECT_EQ(s0->Desired(kT0), 0);
  EXPECT_THAT(MakeError("fast-gs+", {{"time_quota", "0", 5}}), HasSubstr("exp.yaml:5"));
  EXPECT_THAT(MakeError("fast-gs+", {{"time_quota", "1.5", 6}}), HasSubstr("'time_quota'"));
}

TEST(PolicySetsTest, InflessSharesAndHistogramParams) {
  EXPECT_EQ(Make("infless+")->QuotaFor(Traits()), (SmQuota{0.6, 0.6}));
  EXPECT_EQ(Make("infless+", {{"share", "request", 1}})->QuotaFor(Traits()), (SmQuota{0.3, 0.3}));
  EXPECT_EQ(Make("infless-l")->QuotaFor(Traits()), (SmQuota{0.6, 0.6}));
  EXPECT_EQ(Make("infless-r")->QuotaFor(Traits()), (SmQuota{0.3, 0.3}));
  EXPECT_THAT(MakeError("infless-r", {{"share", "limit", 4}}),
              HasSubstr("exp.yaml:4: field 'share'"));
  for (const char* name : {"infless+", "infless-l", "infless-r"}) {
    auto set = Make(name);
    EXPECT_EQ(set->placement().name(), name);
    EXPECT_FALSE(set->work_conserving());
  }

  auto set = Make("infless+", {{"bins", "60", 2}, {"bin_s", "2", 3}, {"prewarm_lead_s", "1", 4}});
  auto scaler = set->MakeScaler(Traits());
  auto* h = dynamic_cast<HistogramScaler*>(scaler.get());
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->config().histogram.bins, 60);
  EXPECT_EQ(h->config().histogram.bin_width, absl::Seconds(2));
  EXPECT_EQ(h->config().fallback_keep_alive, absl::Seconds(120));  // bins x bin_s
  EXPECT_EQ(h->config().prewarm_lead, absl::Seconds(1));
  EXPECT_EQ(h->config().capacity_rps, 100);
  h->Observe({kT0, 250, 0, 0, 0});  // scale-out on the first overloaded sample
  EXPECT_EQ(h->Desired(kT0), 3);

  EXPECT_THAT(
      MakeError("infless+", {{"prewarm_percentile", "50", 7}, {"keep_alive_percentile", "40", 8}}),
      HasSubstr("exp.yaml:8: field 'keep_alive_percentile'"));
}

TEST(PolicySetsTest, TgsPriorityControllerOnRequestPlacement) {
  auto set = Make("tgs", {{"period_ms", "10", 2}, {"floor", "0.02", 3}});
  EXPECT_EQ(set->QuotaFor(Traits()), (SmQuota{0.3, 1.0}));
  EXPECT_TRUE(set->work_conserving());
  auto ctl = set->MakeVerticalController(GpuId(0));
  EXPECT_EQ(ctl->name(), "tgs");
  EXPECT_EQ(ctl->period(), absl::Milliseconds(10));
  // Two replicas of an inference function and a training job at request 0.3 share one GPU;
  // both replicas are production, the training job is opportunistic.
  ClusterState c(ClusterSpec::Uniform(1, NodeSpec{}));
  std::vector<InstanceActivity> acts;
  for (int i = 0; i < 3; ++i) {
    InstanceDemand d;
    d.function = FunctionId(i < 2 ? 1 : 2);
    d.instance = InstanceId(i);
    d.memory_per_gpu = Bytes::GiB(4);
    d.quota = set->QuotaFor(Traits(i < 2 ? FunctionKind::kInference : FunctionKind::kTraining));
    auto g = PlaceAndCommit(set->placement(), c, d);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ((*g)[0], GpuId(0));
    acts.push_back({d.instance, d.quota, i < 2, false, 1000});
  }
  std::vector<int64_t> tokens(3);
  ctl->Issue(kT0, 100000, acts, tokens);
  EXPECT_EQ(tokens, (std::vector<int64_t>{100000, 100000, 5000}));
  EXPECT_THAT(MakeError("tgs", {{"floor", "0.2", 9}}),
              HasSubstr("exp.yaml:9: field 'floor': policy 'tgs'"));
}

// GPU 0 hosts an instance of function 1 (light), GPU 1 one of function 2 (fuller); where does a
// second instance of function 1 go?
GpuId PlaceSibling(PolicySet& set) {
  NodeSpec node;
  node.gpu_count = 2;
  ClusterState c(ClusterSpec::Uniform(1, node));
  EXPECT_TRUE(c.Add({InstanceId(0), FunctionId(1), GpuId(0), Bytes::GiB(2), {0.2, 0.4}}).ok());
  EXPECT_TRUE(c.Add({InstanceId(1), FunctionId(2), GpuId(1), Bytes::GiB(10), {0.5, 0.8}}).ok());
  InstanceDemand d;
  d.function = FunctionId(1);
  d.instance = InstanceId(2);
  d.memory_per_gpu = Bytes::GiB(2);
  d.quota = {0.2, 0.4};
  auto g = set.placement().Place(d, c);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? (*g)[0] : GpuId(-1);
}

TEST(PolicySetsTest, DiluWrapsItsComponentsAndAblationSwitchesChangeThem) {
  auto dilu = Make("dilu");
  EXPECT_EQ(dilu->QuotaFor(Traits()), (SmQuota{0.3, 0.6}));  // the profiled elastic quota
  EXPECT_TRUE(dilu->work_conserving());
  EXPECT_EQ(dilu->placement().name(), "dilu");
  EXPECT_EQ(dilu->MakeVerticalController(GpuId(0))->name(), "dilu");
  EXPECT_EQ(dilu->MakeVerticalController(GpuId(0))->period(), absl::Milliseconds(5));
  auto scaler = dilu->MakeScaler(Traits());
  EXPECT_EQ(scaler->name(), "dilu-lazy");
  EXPECT_EQ(scaler->Desired(kT0), 1);  // Dilu's min_instances default

  auto no_vs = Make("dilu", {{"vertical_scaling", "false", 2}});
  EXPECT_FALSE(no_vs->work_conserving());
  EXPECT_EQ(no_vs->MakeVerticalController(GpuId(0))->name(), "dilu-static");

  auto no_wa = Make("dilu", {{"workload_affinity", "false", 2}});
  auto no_rc =
      Make("dilu", {{"workload_affinity", "false", 2}, {"resource_complementarity", "false", 3}});
  EXPECT_FALSE(dynamic_cast<DiluScheduler&>(no_wa->placement()).config().workload_affinity);
  EXPECT_FALSE(dynamic_cast<DiluScheduler&>(no_rc->placement()).config().resource_complementarity);
  EXPECT_EQ(PlaceSibling(*dilu), GpuId(0));   // affinity: beside its sibling
  EXPECT_EQ(PlaceSibling(*no_wa), GpuId(1));  // score: the fuller GPU leaves fewer fragments
  EXPECT_EQ(PlaceSibling(*no_rc), GpuId(0));  // plain first fit by GPU id

  EXPECT_THAT(MakeError("dilu", {{"gamma", "0.5", 6}}), HasSubstr("exp.yaml:6"));
}

TEST(PolicySetsTest, RegisterAllPoliciesRestoresBuiltins) {
  RegisterPolicy("infless-l", [](std::span<const PolicyParam>, const std::string&) {
    return absl::StatusOr<std::unique_ptr<PolicySet>>(absl::InternalError("replaced"));
  });
  EXPECT_FALSE(MakePolicySet("infless-l", {}, "exp.yaml").ok());
  RegisterAllPolicies();
  EXPECT_NE(Make("infless-l"), nullptr);
  RegisterAllPolicies();  // idempotent
  EXPECT_NE(Make("infless-l"), nullptr);
}

}  // namespace
}  // namespace sluice::core
