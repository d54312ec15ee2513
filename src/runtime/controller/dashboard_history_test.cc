// DashboardHistory: the sample and event rings, the diff that derives scaling events, and the
// state JSON the dashboard polls.
#include "runtime/controller/dashboard_history.h"

#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

absl::Time T(int s) { return absl::FromUnixSeconds(1'700'000'000 + s); }

DashSample Sample(int s, int desired, double share = 0.5, const std::string& state = "NONE") {
  DashSample x;
  x.at = T(s);
  x.gpus.push_back({"node-0", "GPU-a", 0, "emulated", state});
  DashInstance i;
  i.id = 7;
  i.function = "classifier";
  i.node = "node-0";
  i.gpu = "GPU-a";
  i.state = "ready";
  i.sm_share = share;
  i.request = 0.3;
  i.limit = 0.6;
  x.instances.push_back(i);
  DashFunction f;
  f.name = "classifier";
  f.kind = "inference";
  f.state = "ready";
  f.desired = desired;
  f.ready = 1;
  f.slo_ms = 50;
  x.functions.push_back(f);
  return x;
}

std::vector<std::string> Kinds(const std::vector<DashEvent>& events) {
  std::vector<std::string> k;
  for (const DashEvent& e : events)
    k.push_back(e.kind);
  return k;
}

TEST(DiffSamples, DesiredUpIsAScaleOutAndDownAScaleIn) {
  const auto out = DiffSamples(Sample(0, 1), Sample(1, 2));
  ASSERT_EQ(Kinds(out), std::vector<std::string>{"scale_out"});
  EXPECT_EQ(out[0].function, "classifier");
  EXPECT_EQ(out[0].at, T(1));
  EXPECT_THAT(out[0].detail, HasSubstr("desired 1 -> 2"));
  EXPECT_EQ(Kinds(DiffSamples(Sample(1, 2), Sample(2, 1))), std::vector<std::string>{"scale_in"});
  EXPECT_TRUE(DiffSamples(Sample(0, 1, 0.2), Sample(1, 1, 0.9)).empty())
      << "a share the token server moves is a sample, not an event";
}

TEST(DiffSamples, InstancesArrivingLeavingFailingAndChangingQuota) {
  DashSample empty = Sample(0, 1);
  empty.instances.clear();
  const DashSample one = Sample(1, 1);
  EXPECT_EQ(Kinds(DiffSamples(empty, one)), std::vector<std::string>{"placement"});
  EXPECT_THAT(DiffSamples(empty, one)[0].detail, HasSubstr("GPU-a"));
  EXPECT_EQ(Kinds(DiffSamples(one, empty)), std::vector<std::string>{"stopped"});
  DashSample resized = Sample(2, 1);
  resized.instances[0].limit = 0.8;
  const auto v = DiffSamples(one, resized);
  ASSERT_EQ(Kinds(v), std::vector<std::string>{"vertical"});
  EXPECT_THAT(v[0].detail, HasSubstr("0.60"));
  EXPECT_THAT(v[0].detail, HasSubstr("0.80"));
  EXPECT_EQ(v[0].instance, 7);
  DashSample failed = Sample(2, 1);
  failed.instances[0].state = "failed";
  failed.instances[0].restarts = 1;
  EXPECT_EQ(Kinds(DiffSamples(one, failed)), (std::vector<std::string>{"failure", "restart"}));
}

TEST(DiffSamples, FunctionsColdStartsUnschedulableAndTokenServerState) {
  DashSample none = Sample(0, 1);
  none.functions.clear();
  EXPECT_EQ(Kinds(DiffSamples(none, Sample(1, 1))), std::vector<std::string>{"deployed"});
  EXPECT_EQ(Kinds(DiffSamples(Sample(1, 1), none)), std::vector<std::string>{"deleted"});
  DashSample cold = Sample(1, 1);
  cold.functions[0].cold_starts = 1;
  EXPECT_EQ(Kinds(DiffSamples(Sample(0, 1), cold)), std::vector<std::string>{"cold_start"});
  DashSample stuck = Sample(1, 1);
  stuck.functions[0].state = "unschedulable";
  EXPECT_EQ(Kinds(DiffSamples(Sample(0, 1), stuck)), std::vector<std::string>{"unschedulable"});
  DashSample full = Sample(1, 2);
  full.functions[0].no_room = true;  // desired 2, one running, no GPU with room for the second
  const auto nf = DiffSamples(Sample(0, 1), full);
  ASSERT_EQ(Kinds(nf), (std::vector<std::string>{"scale_out", "unschedulable"}));
  EXPECT_THAT(nf[1].detail, HasSubstr("no GPU has room"));
  EXPECT_TRUE(DiffSamples(full, full).empty()) << "reported once, when it starts";
  const auto s = DiffSamples(Sample(0, 1), Sample(1, 1, 0.5, "EMERGENCY"));
  ASSERT_EQ(Kinds(s), std::vector<std::string>{"share_state"});
  EXPECT_THAT(s[0].detail, HasSubstr("NONE -> EMERGENCY"));
}

TEST(DashboardHistory, RingsKeepTheNewestAndSeqNumbersGrow) {
  DashboardHistory h(3, 2);
  for (int s = 0; s < 6; ++s)
    h.Add(Sample(s, 1 + s % 2));  // every step scales out or in
  ASSERT_EQ(h.sample_count(), 3u);
  EXPECT_EQ(h.samples().front().at, T(3));
  EXPECT_EQ(h.samples().back().at, T(5));
  ASSERT_EQ(h.event_count(), 2u);
  EXPECT_EQ(h.events().front().seq, 4);
  EXPECT_EQ(h.events().back().seq, 5);
  h.Add(Sample(2, 9));  // older than the last: dropped, no event
  EXPECT_EQ(h.samples().back().at, T(5));
  EXPECT_EQ(h.events().back().seq, 5);
}

TEST(DashboardHistory, PropertyRingsStayBoundedOrderedAndEventsAreTheDiffs) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    const size_t cap = 1 + rng() % 10;
    DashboardHistory h(cap, 1000);
    int t = 0, expected_events = 0;
    DashSample prev;
    for (int n = 0; n < 40; ++n) {
      t += static_cast<int>(rng() % 3);  // equal times allowed
      DashSample s = Sample(t, static_cast<int>(rng() % 4), 0.1 * (rng() % 10),
                            rng() % 2 ? "NONE" : "CONTENTION");
      if (n > 0)
        expected_events += static_cast<int>(DiffSamples(prev, s).size());
      prev = s;
      h.Add(s);
    }
    ASSERT_LE(h.sample_count(), cap) << "seed " << seed;
    for (size_t k = 1; k < h.samples().size(); ++k)
      ASSERT_LE(h.samples()[k - 1].at, h.samples()[k].at) << "seed " << seed;
    ASSERT_EQ(h.event_count(), static_cast<size_t>(expected_events)) << "seed " << seed;
  }
}

TEST(DashboardHistory, StateJsonReturnsWhatCameAfterSince) {
  DashboardHistory h(100, 100);
  h.Add(Sample(0, 1));
  h.Add(Sample(1, 2));
  h.Add(Sample(2, 2, 0.7, "EMERGENCY"));
  const json all = h.StateJson(T(3), absl::UnixEpoch());
  ASSERT_EQ(all["samples"].size(), 3u);
  EXPECT_EQ(all["now_ms"], DashMs(T(3)));
  EXPECT_EQ(all["events"].size(), 2u);
  const json& s = all["samples"][2];
  EXPECT_EQ(s["t"], DashMs(T(2)));
  EXPECT_DOUBLE_EQ(s["instances"]["7"]["sm_share"].get<double>(), 0.7);
  EXPECT_EQ(s["instances"]["7"]["function"], "classifier");
  EXPECT_EQ(s["gpus"]["GPU-a"], "EMERGENCY");
  EXPECT_EQ(s["functions"]["classifier"]["desired"], 2);
  const json& latest = all["latest"];
  EXPECT_EQ(latest["functions"][0]["name"], "classifier");
  EXPECT_EQ(latest["functions"][0]["slo_ms"], 50.0);
  EXPECT_EQ(latest["gpus"][0]["share_state"], "EMERGENCY");
  EXPECT_EQ(latest["instances"][0]["node"], "node-0");

  const json later = h.StateJson(T(3), T(1));
  ASSERT_EQ(later["samples"].size(), 1u);
  EXPECT_EQ(later["samples"][0]["t"], DashMs(T(2)));
  ASSERT_EQ(later["events"].size(), 1u);
  EXPECT_EQ(later["events"][0]["kind"], "share_state");
  EXPECT_TRUE(h.StateJson(T(3), T(2))["samples"].empty());
  EXPECT_TRUE(DashboardHistory(5, 5).StateJson(T(0), T(0))["latest"].is_null());
}

TEST(DashFunction, SvrIsViolationsOverAnswered) {
  DashFunction f;
  EXPECT_EQ(f.svr(), 0);
  f.answered = 40;
  f.violations = 10;
  EXPECT_DOUBLE_EQ(f.svr(), 0.25);
}

}  // namespace
}  // namespace sluice::runtime
