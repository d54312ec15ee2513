// End-to-end rejection and persistence on the emulated device (issue 5 "Tests"): bad specs are
// refused with file:line and the field (admin API 400, `sluice deploy` exit 2), bad requests
// with 400 naming the field or 404 for an unknown function; and a restarted controller keeps
// its registry (SQLite): the function and its profile come back without re-profiling and its
// running instance is re-adopted, not restarted.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "platform_test_base.h"
#if defined(SLUICE_E2E_HAVE_CLI)
#include "runtime/cli/client_commands.h"
#endif

namespace sluice::runtime::e2e {
namespace {

using ::testing::HasSubstr;

// Lines 1-6 of a valid inference spec; each case appends or replaces the rest.
constexpr char kHead[] =
    "name: bad\n"                 // 1
    "kind: inference\n"           // 2
    "command: [\"/bin/true\"]\n"  // 3
    "model: {path: m}\n"          // 4
    "slo_ms: 50\n"                // 5
    "memory_gib: 1\n";            // 6

struct BadSpec {
  std::string yaml;
  std::string want;  // substring of the error message
};

std::vector<BadSpec> BadSpecs() {
  return {
      {absl::StrCat(kHead, "batching: {max_batch: 0}\n"), "request:7: field 'batching.max_batch'"},
      {absl::StrCat(kHead, "replicas: 3\n"), "request:7: field 'replicas': unknown key"},
      {"name: bad\nkind: inference\ncommand: [\"/bin/true\"]\nmodel: {path: m}\nmemory_gib: 1\n",
       "field 'slo_ms'"},
      {absl::StrCat("name: bad\nkind: inference\ncommand: [\"/bin/true\"]\nmodel: {path: m}\n",
                    "slo_ms: 50\nmemory_gib: lots\n"),
       "request:6: field 'memory_gib'"},
      {absl::StrCat(kHead, "quota: {request: 0.8, limit: 0.4}\n"), "request:7: field 'quota"},
      {absl::StrCat(kHead, "batching: {max_batch: 4\n"), "invalid YAML"},
  };
}

// The message of a {"error": {"code", "message"}} answer, after checking its code.
std::string ErrorMessage(const http::Response& r) {
  const Json j = Json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("error"))
    return "<no error object: " + r.body + ">";
  EXPECT_EQ(j["error"].value("code", 0), r.status) << r.body;
  return j["error"].value("message", "");
}

TEST_F(PlatformTest, BadSpecsAreRejectedWithFileLineAndFieldByTheApiAndTheCli) {
  for (const BadSpec& bad : BadSpecs()) {
    SCOPED_TRACE(bad.yaml);
    absl::StatusOr<http::Response> r = p_->Deploy(bad.yaml);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_THAT(ErrorMessage(*r), HasSubstr(bad.want));

#if defined(SLUICE_E2E_HAVE_CLI)
    // `sluice deploy FILE`: exit 2, the message names the file, the line and the field.
    const std::string file = p_->WriteFile("bad.yaml", bad.yaml);
    ClientFlags flags;
    flags.home = p_->dir();
    flags.controller = p_->controller();
    ::testing::internal::CaptureStderr();
    const int code = RunDeploy(flags, file, /*wait=*/false, 0);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 2) << err;
    std::string want = bad.want;
    if (want.rfind("request:", 0) == 0)
      want.replace(0, 7, file);
    EXPECT_THAT(err, HasSubstr(want));
#endif
  }
  // Nothing was registered.
  absl::StatusOr<http::Response> list =
      Platform::Send(p_->controller(), "GET", "/admin/v1/functions");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(Json::parse(list->body)["functions"], Json::array()) << list->body;
}

TEST_F(PlatformTest, BadRequestsAreRejectedNamingTheFieldAndUnknownFunctionsWith404) {
  // echo: no GPU work and a pre-set quota (one capacity trial instead of profiling).
  const std::string echo =
      "name: echo\nkind: inference\ncommand: [\"${SLUICE_BIN_DIR}/sluice-example-echo\"]\n"
      "model: {path: none}\nslo_ms: 100\nmemory_gib: 0.1\nautoscaling: {min: 1, max: 1}\n"
      "quota: {request: 0.1, limit: 0.2}\n";
  DeployAndWait(echo, "echo", 1);
  ASSERT_FALSE(HasFailure());
  absl::StatusOr<http::Response> r = p_->Deploy(absl::StrCat(echo, "env: {A: b}\n"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 409) << r->body;  // same name, other spec
  EXPECT_THAT(ErrorMessage(*r), HasSubstr("echo"));

  // Wait until the gateway's routes know echo (404 before).
  absl::Time until = absl::Now() + absl::Seconds(5);
  while (absl::Now() < until) {
    r = Platform::Send(p_->gateway(), "GET", "/v2/models/echo/ready");
    if (r.ok() && r->status == 200)
      break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());

  struct Case {
    std::string target, body;
    int status;
    std::string want;
  };
  const Json good = Row("g", {1}, {2.5f});
  const std::vector<Case> cases = {
      {"/v2/models/nope/infer", good.dump(), 404, "nope"},
      {"/v2/models/echo/infer", "{not json", 400, "body"},
      {"/v2/models/echo/infer", R"({"id": "x"})", 400, "inputs"},
      {"/v2/models/echo/infer", R"({"inputs": 5})", 400, "inputs"},
      {"/v2/models/echo/infer", R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})",
       400, "inputs[0].shape"},
      {"/v2/models/echo/infer",
       R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1], "data": [1]}]})", 400,
       "inputs[0].shape[0]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target + " " + c.body);
    r = Platform::Send(p_->gateway(), "POST", c.target, c.body);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, c.status) << r->body;
    EXPECT_THAT(ErrorMessage(*r), HasSubstr(c.want));
  }
  r = Platform::Send(p_->gateway(), "GET", "/v2/models/nope/ready");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  r = Platform::Send(p_->gateway(), "POST", "/v2/models/echo/infer", good.dump(),
                     "application/json", {{"sluice-timeout-ms", "soon"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_THAT(ErrorMessage(*r), HasSubstr("Sluice-Timeout-Ms"));
  // The good request still works.
  r = p_->Infer("echo", good);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json::parse(r->body)["outputs"], good["inputs"]);

  // Admin API: unknown names 404, bad scale bodies 400 naming the field.
  for (const char* method : {"GET", "DELETE"}) {
    r = Platform::Send(p_->controller(), method, "/admin/v1/functions/nope");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 404) << method;
    EXPECT_THAT(ErrorMessage(*r), HasSubstr("nope"));
  }
  for (const auto& [body, field] :
       std::vector<std::pair<std::string, std::string>>{{R"({"min": -1})", "min"},
                                                        {R"({"max": "two"})", "max"},
                                                        {R"({"min": 2, "max": 1})", "min"}}) {
    r = Platform::Send(p_->controller(), "PUT", "/admin/v1/functions/echo/scale", body);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, 400) << body << " " << r->body;
    EXPECT_THAT(ErrorMessage(*r), HasSubstr("'" + field + "'")) << body;
  }
}

TEST_F(PlatformTest, RestartedControllerKeepsTheRegistryProfileAndInstances) {
  ClassifierSpec spec;
  spec.name = "kept";
  spec.model_path = p_->WriteFile("weights.json", KnownWeights());
  spec.min = 1;
  spec.max = 1;
  const Json before = DeployAndWait(spec.Yaml(), "kept", 1);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(before["profile"]["source"], "profiled") << before.dump();
  const int64_t id = before["instances"][0]["id"];
  const Json agent_before = p_->AgentInstance(id);
  ASSERT_EQ(agent_before.value("state", ""), "ready") << agent_before.dump();

  ASSERT_TRUE(p_->RestartController().ok());
  // At once after Start: the registry is loaded, with the same profile.
  Json after = p_->Describe("kept");
  ASSERT_TRUE(after.is_object());
  EXPECT_EQ(after["state"], "ready") << after.dump();
  EXPECT_EQ(after["profile"], before["profile"]);
  EXPECT_EQ(after["spec_yaml"], before["spec_yaml"]);
  // For a while (several node polls): never profiling again, and the same instance - same id,
  // same pid - is the function's only one.
  const absl::Time until = absl::Now() + absl::Seconds(1);
  while (absl::Now() < until) {
    after = p_->Describe("kept");
    ASSERT_TRUE(after.is_object());
    EXPECT_NE(after["state"], "profiling");
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::StatusOr<Json> adopted = p_->WaitReadyInstances("kept", 1, absl::Seconds(5));
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ((*adopted)["instances"][0]["id"], id);
  const Json live = p_->AgentInstances("kept");
  ASSERT_EQ(live.size(), 1u) << live.dump();
  EXPECT_EQ(live[0]["id"], id);
  EXPECT_EQ(live[0]["pid"], agent_before["pid"]);
  EXPECT_EQ(live[0]["restarts"], agent_before["restarts"]);
  // No trial ran in the new controller.
  EXPECT_LE(Platform::MetricValue(p_->controller(),
                                  "sluice_controller_profiling_trials_total{function=\"kept\"}"),
            0);
  // Deploying the same spec again is a no-op (200), and the function serves.
  absl::StatusOr<http::Response> r = p_->Deploy(spec.Yaml());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200) << r->body;
  r = p_->Infer("kept", Row("p", {2}, {3, 4}), {{"sluice-timeout-ms", "9000"}});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200) << r->body;
  int64_t cls = 0;
  const std::vector<float> want = KnownScores(3, 4, &cls);
  const Json j = Json::parse(r->body);
  EXPECT_NEAR(j["outputs"][0]["data"][0].get<float>(), want[0], 1e-5);
  EXPECT_EQ(j["outputs"][1]["data"][0].get<int64_t>(), cls);
}

}  // namespace
}  // namespace sluice::runtime::e2e
