// ControllerTest: the fixture of the controller daemon's end-to-end tests (a ControllerDaemon
// against one FakeAgent with 2 GPUs, driven through the admin and internal HTTP APIs). Used by
// controller_daemon_test.cc and controller_multigpu_test.cc. Waits poll with a generous bound.
#ifndef SLUICE_RUNTIME_CONTROLLER_TESTING_CONTROLLER_FIXTURE_H_
#define SLUICE_RUNTIME_CONTROLLER_TESTING_CONTROLLER_FIXTURE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/controller/controller_daemon.h"
#include "runtime/controller/testing/fake_agent.h"
#include "runtime/http/http.h"

namespace sluice::runtime {

// An inference spec named `name` with autoscaling bounds [min, max] and `extra` YAML appended.
inline std::string InferenceSpec(const std::string& name, int min, int max,
                                 const std::string& extra = "") {
  return absl::StrCat("name: ", name, R"(
kind: inference
command: ["./serve"]
model: {path: /models/m}
slo_ms: 40
memory_gib: 2
batching: {max_batch: 8, max_queue_delay_ms: 5}
autoscaling: {min: )",
                      min, ", max: ", max, "}\n", extra);
}

class ControllerTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  void SetUp() override {
    auto agent = FakeAgent::Start(2, int64_t{16} << 30, model_);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    options_.port = 0;
    options_.agents = {agent_->url()};
    options_.node_poll = absl::Milliseconds(20);
    options_.trial_iterations = 1;
    options_.drain_grace = absl::Milliseconds(50);
    options_.lazy.window = absl::Seconds(600);  // samples come faster than 1/s here
    options_.lazy.phi_out = 3;
    options_.lazy.phi_in = 4;
    // These tests drive the controller's own lazy scaler (Dilu's) with the fast settings
    // above; the product default (`sluice`) is tested by controller_park_test.cc.
    options_.default_policy = "dilu";
  }
  void TearDown() override {
    daemon_.reset();
    agent_.reset();
    if (!dir_.empty())
      std::filesystem::remove_all(dir_);
  }

  void StartDaemon() {
    auto d = ControllerDaemon::Start(options_);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
    agent_->set_controller(url());
  }
  std::string url() const { return absl::StrCat("127.0.0.1:", daemon_->port()); }

  http::Response Call(const std::string& method, const std::string& path,
                      const std::string& body = "") {
    http::Request req;
    req.method = method;
    req.target = path;
    req.body = body;
    req.headers = {{"content-type", "application/json"}};
    auto r = http::Fetch(*http::Endpoint::Parse(url()), std::move(req));
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok())
      return *r;
    http::Response failed;
    failed.status = 0;
    return failed;
  }
  json Get(const std::string& path) { return json::parse(Call("GET", path).body); }
  http::Response Deploy(const std::string& yaml) {
    return Call("POST", "/admin/v1/functions", yaml);
  }
  // Polls `pred` until true (bounded: a hang fails instead of blocking ctest).
  bool WaitFor(const std::function<bool()>& pred) {
    for (int i = 0; i < 1500; ++i) {
      if (pred())
        return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  json Describe(const std::string& name) { return Get("/admin/v1/functions/" + name); }
  bool WaitState(const std::string& name, const std::string& state) {
    return WaitFor([&] { return Describe(name).value("state", "") == state; });
  }
  json Route(const std::string& name) {
    const json routes = Get("/internal/v1/routes");
    for (const json& f : routes["functions"]) {
      if (f["name"] == name)
        return f;
    }
    return json();
  }
  int RoutedInstances(const std::string& name) {
    const json r = Route(name);
    return r.is_null() ? 0 : static_cast<int>(r["instances"].size());
  }
  void ReportLoad(const std::string& name, double rps) {
    const http::Response r = Call(
        "POST", "/internal/v1/load",
        json{{"at_ms", 0}, {"functions", {{{"name", name}, {"rps", rps}, {"queued", 0}}}}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
  }

  // DELETEs of serving instances (not of the profiling instance, which is started restart never).
  std::vector<FakeDelete> ServingDeletes() {
    std::set<int64_t> serving;
    for (const FakeInstance& i : agent_->instances()) {
      if (i.restart == "on-failure")
        serving.insert(i.id);
    }
    std::vector<FakeDelete> out;
    for (const FakeDelete& d : agent_->deletes()) {
      if (serving.contains(d.id))
        out.push_back(d);
    }
    return out;
  }

  FakeModel model_;
  ControllerOptions options_;
  std::unique_ptr<FakeAgent> agent_;
  std::unique_ptr<ControllerDaemon> daemon_;
  std::string dir_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_TESTING_CONTROLLER_FIXTURE_H_
