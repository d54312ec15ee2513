// Policy registry: built-in policy sets, their params and the errors for bad params.
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "core/registry/param_reader.h"
#include "core/registry/policy_registry.h"

namespace sluice::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<PolicySet> Make(std::string_view name, std::vector<PolicyParam> params = {}) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

absl::Status MakeError(std::string_view name, std::vector<PolicyParam> params) {
  auto s = MakePolicySet(name, params, "exp.yaml");
  EXPECT_FALSE(s.ok());
  return s.status();
}

TEST(PolicyRegistryTest, KnowsTheStaticBaselines) {
  std::vector<std::string> known = KnownPolicies();
  EXPECT_NE(std::find(known.begin(), known.end(), "exclusive"), known.end());
  EXPECT_NE(std::find(known.begin(), known.end(), "mps-l"), known.end());
  EXPECT_NE(std::find(known.begin(), known.end(), "mps-r"), known.end());
  EXPECT_TRUE(std::is_sorted(known.begin(), known.end()));
}

TEST(PolicyRegistryTest, QuotaRulesFollowDiluTable1) {
  FunctionTraits f;
  f.profiled = {0.3, 0.6};
  EXPECT_EQ(Make("exclusive")->QuotaFor(f), (SmQuota{1, 1}));
  EXPECT_EQ(Make("mps-l")->QuotaFor(f), (SmQuota{0.6, 0.6}));
  EXPECT_EQ(Make("mps-r")->QuotaFor(f), (SmQuota{0.3, 0.3}));
  for (const char* name : {"exclusive", "mps-l", "mps-r"}) {
    auto s = Make(name);
    EXPECT_EQ(s->name(), name);
    EXPECT_EQ(s->placement().name(), name);
    EXPECT_FALSE(s->work_conserving());
    EXPECT_EQ(s->MakeVerticalController(GpuId(0))->period(), absl::InfiniteDuration());
  }
}

TEST(PolicyRegistryTest, ScalerUsesTraitsAndKeepAliveParam) {
  auto set = Make("mps-r", {{"keep_alive_s", "30", 4}});
  FunctionTraits f;
  f.capacity_rps = 100;
  f.max_instances = 5;
  auto scaler = set->MakeScaler(f);
  const absl::Time t0 = absl::UnixEpoch();
  scaler->Observe({t0, 150, 0, 0, 0});  // sample without capacity: traits' 100 rps -> 2
  EXPECT_EQ(scaler->Desired(t0), 2);
  EXPECT_EQ(scaler->Desired(t0 + absl::Seconds(29)), 2);
  EXPECT_EQ(scaler->Desired(t0 + absl::Seconds(30)), 0);
  scaler->Observe({t0 + absl::Seconds(31), 1e6, 0, 100, 0});
  EXPECT_EQ(scaler->Desired(t0 + absl::Seconds(31)), 5);  // max_instances
}

TEST(PolicyRegistryTest, NodeOrderParamReachesPlacement) {
  ClusterState c(ClusterSpec::Uniform(2, NodeSpec{}));
  auto set = Make("exclusive", {{"node_order", "least_allocated", 2}});
  InstanceDemand d;
  d.memory_per_gpu = Bytes::GiB(1);
  std::vector<int64_t> nodes;
  for (int i = 0; i < 2; ++i) {
    d.instance = InstanceId(i);
    auto g = set->placement().Place(d, c);
    ASSERT_TRUE(g.ok());
    const Allocation a{d.instance, d.function, (*g)[0], d.memory_per_gpu, {1, 1}};
    ASSERT_TRUE(c.Add(a).ok());
    set->placement().OnAdded(a, c);
    nodes.push_back(c.gpu((*g)[0]).node.value());
  }
  EXPECT_THAT(nodes, ElementsAre(0, 1));  // spread; the default would pack onto node 0
}

TEST(PolicyRegistryTest, ErrorsNameFileLineAndKey) {
  absl::Status s = MakeError("exclusive", {{"keep_alive_s", "60", 3}, {"keepalive", "5", 7}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("exp.yaml:7"));
  EXPECT_THAT(s.message(), HasSubstr("'keepalive'"));
  EXPECT_THAT(s.message(), HasSubstr("keep_alive_s, node_order, queue_drain_s"));

  s = MakeError("mps-l", {{"keep_alive_s", "sixty", 3}});
  EXPECT_THAT(s.message(), HasSubstr("exp.yaml:3"));
  EXPECT_THAT(s.message(), HasSubstr("'keep_alive_s'"));
  EXPECT_THAT(MakeError("mps-l", {{"keep_alive_s", "60s", 3}}).message(), HasSubstr(":3"));
  EXPECT_THAT(MakeError("mps-l", {{"keep_alive_s", "-1", 5}}).message(), HasSubstr(":5"));
  EXPECT_THAT(MakeError("mps-l", {{"keep_alive_s", "nan", 5}}).message(), HasSubstr(":5"));
  EXPECT_THAT(MakeError("mps-l", {{"queue_drain_s", "0", 6}}).message(), HasSubstr(":6"));
  EXPECT_THAT(MakeError("mps-r", {{"node_order", "random", 8}}).message(),
              HasSubstr("exp.yaml:8: field 'node_order'"));
  EXPECT_THAT(MakeError("mps-r",
                        {{"node_order", "least_allocated", 8}, {"node_order", "most_allocated", 9}})
                  .message(),
              HasSubstr("exp.yaml:9: field 'node_order': policy 'mps-r': given twice"));

  s = MakeError("dilu-typo", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("exp.yaml"));
  EXPECT_THAT(s.message(), HasSubstr("unknown policy 'dilu-typo'"));
  EXPECT_THAT(s.message(), HasSubstr("dilu, exclusive, fast-gs+, fast-gshare, has-gpu, inferline, "
                                           "infless, infless+, infless-l, infless-r, kserve"));
}

TEST(PolicyRegistryTest, RegisterAddsAnEntry) {
  RegisterPolicy("test-exclusive-copy",
                 [](std::span<const PolicyParam> params, const std::string& file) {
                   ParamReader r("test-exclusive-copy", params, file);
                   auto gamma = r.Double("gamma", 1.5, 1.0, 2.0);
                   if (!gamma.ok())
                     return absl::StatusOr<std::unique_ptr<PolicySet>>(gamma.status());
                   if (absl::Status st = r.Finish(); !st.ok()) {
                     return absl::StatusOr<std::unique_ptr<PolicySet>>(st);
                   }
                   return MakePolicySet("exclusive", {}, file);
                 });
  std::vector<std::string> known = KnownPolicies();
  EXPECT_NE(std::find(known.begin(), known.end(), "test-exclusive-copy"), known.end());
  EXPECT_NE(Make("test-exclusive-copy", {{"gamma", "1.2", 2}}), nullptr);
  EXPECT_THAT(MakeError("test-exclusive-copy", {{"gamma", "2.5", 4}}).message(),
              HasSubstr("exp.yaml:4: field 'gamma'"));
}

TEST(ParamReaderTest, ParsesTypesStrictly) {
  std::vector<PolicyParam> ps = {
      {"n", "12", 1}, {"b", "true", 2}, {"x", " 1.5", 3}, {"i", "1.0", 4}};
  ParamReader r("p", ps, "f.yaml");
  EXPECT_EQ(*r.Int("n", 0, 0, 100), 12);
  EXPECT_TRUE(*r.Bool("b", false));
  EXPECT_EQ(*r.Int("absent", 7, 0, 100), 7);
  EXPECT_FALSE(r.Int("i", 0, 0, 10).ok());  // not an integer
  EXPECT_THAT(r.Finish().message(), HasSubstr("f.yaml:3: field 'x': policy 'p': unknown key"));
  EXPECT_DOUBLE_EQ(*r.Double("x", 0, 0, 2), 1.5);
  EXPECT_TRUE(r.Finish().ok());
  EXPECT_FALSE(r.Bool("n", false).ok());  // "12" is not a bool
}

}  // namespace
}  // namespace sluice::core
