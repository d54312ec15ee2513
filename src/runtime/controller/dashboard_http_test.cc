// Dashboard: load reports folded into samples, the state/page/asset/report answers, and the
// dashboard of a running ControllerDaemon (against FakeAgent) listing a deployed function.
#include "runtime/controller/dashboard_http.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/controller/dashboard_assets.h"
#include "runtime/controller/testing/controller_fixture.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

absl::Time T(double s) { return absl::FromUnixSeconds(1'700'000'000) + absl::Seconds(s); }

DashSample OneFunction(absl::Time at) {
  DashSample s;
  s.at = at;
  DashFunction f;
  f.name = "classifier";
  f.state = "ready";
  s.functions.push_back(f);
  return s;
}

json LoadEntry() {
  return json::array({{{"name", "classifier"},
                       {"rps", 42.5},
                       {"queued", 3},
                       {"answered", 30},
                       {"rejected", 10},
                       {"slo_violations", 12},
                       {"p50_ms", 9.0},
                       {"p95_ms", 48.0},
                       {"p99_ms", 71.5}}});
}

TEST(Dashboard, SamplesCarryTheLastLoadReportUntilItIsStale) {
  Dashboard d;
  EXPECT_TRUE(d.Due(T(0)));
  d.OnLoad(LoadEntry(), T(0));
  d.Add(OneFunction(T(0.5)));
  EXPECT_FALSE(d.Due(T(1.2)));
  EXPECT_TRUE(d.Due(T(1.5)));
  const DashFunction& f = d.history().samples().back().functions[0];
  EXPECT_DOUBLE_EQ(f.rps, 42.5);
  EXPECT_EQ(f.queued, 3);
  EXPECT_EQ(f.answered, 40) << "rejected requests count in the SVR's denominator";
  EXPECT_DOUBLE_EQ(f.svr(), 12.0 / 40.0);
  EXPECT_DOUBLE_EQ(f.p95_ms, 48.0);
  EXPECT_DOUBLE_EQ(f.p99_ms, 71.5);
  d.Add(OneFunction(T(10)));  // no report for 10 s: the gateway sees no load any more
  EXPECT_DOUBLE_EQ(d.history().samples().back().functions[0].rps, 0);
}

TEST(Dashboard, OldGatewaysWithoutPercentilesReadAsZero) {
  Dashboard d;
  d.OnLoad(json::array({{{"name", "classifier"}, {"rps", 5}, {"p99_ms", "fast"}}}), T(0));
  d.Add(OneFunction(T(0)));
  const DashFunction& f = d.history().samples().back().functions[0];
  EXPECT_DOUBLE_EQ(f.rps, 5);
  EXPECT_EQ(f.p99_ms, 0);
  EXPECT_EQ(f.svr(), 0);
}

TEST(Dashboard, StateValidatesSinceAndSaysWhetherChartsAreVendored) {
  Dashboard d;
  d.Add(OneFunction(T(0)));
  for (const char* bad : {"abc", "-5", "1.5"}) {
    const http::Response r = d.State(bad, T(1));
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_THAT(r.body, HasSubstr("since")) << bad;
  }
  const http::Response ok = d.State("", T(1));
  ASSERT_EQ(ok.status, 200);
  const json j = json::parse(ok.body);
  EXPECT_EQ(j["samples"].size(), 1u);
  EXPECT_EQ(j["charts"], DashboardChartsVendored());
  EXPECT_EQ(json::parse(d.State(std::to_string(DashMs(T(0))), T(1)).body)["samples"].size(), 0u);
}

TEST(Dashboard, PageAndAssetsAreEmbedded) {
  Dashboard d;
  const http::Response page = d.Page();
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.content_type, HasSubstr("text/html"));
  EXPECT_THAT(page.body, HasSubstr("/dashboard/assets/dashboard.js"));
  for (const char* name : {"dashboard.js", "dashboard.css", "uPlot.iife.min.js", "uPlot.min.css"}) {
    const http::Response a = d.Asset(name);
    EXPECT_EQ(a.status, 200) << name;
    EXPECT_FALSE(a.body.empty()) << name;
  }
  EXPECT_THAT(d.Asset("dashboard.js").content_type, HasSubstr("javascript"));
  EXPECT_EQ(d.Asset("../etc/passwd").status, 404);
  if (DashboardChartsVendored()) {
    EXPECT_GT(d.Asset("uPlot.iife.min.js").body.size(), 20000u) << "the real uPlot, not a stub";
  }
}

TEST(Dashboard, ReportInlinesDataAndLibraryAndLoadsNothing) {
  Dashboard d;
  d.Add(OneFunction(T(0)));
  DashEvent e;
  e.at = T(0.5);
  e.kind = "failure";
  e.detail = "crashed </script><script>alert(1)</script>";
  d.AddEvent(e);
  const http::Response r = d.Report(T(1));
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("window.SLUICE_DASHBOARD_DATA = {"));
  EXPECT_THAT(r.body, HasSubstr("\"classifier\""));
  EXPECT_THAT(r.body, Not(HasSubstr("src=\"/dashboard")));
  EXPECT_THAT(r.body, Not(HasSubstr("href=\"/dashboard")));
  EXPECT_THAT(r.body, Not(HasSubstr("alert(1)</script>"))) << "data cannot close its script";
  EXPECT_THAT(r.body, HasSubstr("id=\"chart-rps\""));
  if (DashboardChartsVendored()) {
    EXPECT_THAT(r.body, HasSubstr("uPlot"));
  }
}

TEST_F(ControllerTest, DashboardListsADeployedFunctionWithItsLoad) {
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("resnet", 1, 3)).status, 201);
  ASSERT_TRUE(WaitState("resnet", "ready"));
  EXPECT_THAT(Call("GET", "/dashboard").body, HasSubstr("<title>Sluice dashboard</title>"));
  ASSERT_TRUE(WaitFor([&] {
    const json s = Get("/dashboard/api/state");
    const json& latest = s["latest"];
    return !latest.is_null() && latest["functions"].size() == 1 &&
           latest["functions"][0]["name"] == "resnet" && latest["functions"][0]["ready"] == 1 &&
           latest["gpus"].size() == 2 && latest["instances"].size() == 1;
  })) << Get("/dashboard/api/state").dump();
  ReportLoad("resnet", 17);
  ASSERT_TRUE(WaitFor([&] {
    const json l = Get("/dashboard/api/state")["latest"];
    return l["functions"][0]["rps"] == 17.0;
  }));
  const json all = Get("/dashboard/api/state?since=0");
  bool placed = false;
  for (const json& e : all["events"])
    placed |= e["kind"] == "placement" && e["function"] == "resnet";
  EXPECT_TRUE(placed) << all["events"].dump();
  EXPECT_EQ(Call("GET", "/dashboard/api/state?since=x").status, 400);
  EXPECT_THAT(Call("GET", "/dashboard/report").body, HasSubstr("\"resnet\""));
}

}  // namespace
}  // namespace sluice::runtime
