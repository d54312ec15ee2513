// Test scaffolding for the controller's pipelines (controller_pipeline_test.cc): a fake
// core::PipelineScaler whose decisions the test scripts, registered under the test-only policy
// name "test-pipeline" (dilu with a recording first-fit placement), a pipeline spec, and the
// fixture. The scaler and placement run on the controller's loop; PipelineScript's mutex guards
// what the test reads.
#ifndef SLUICE_RUNTIME_CONTROLLER_TESTING_PIPELINE_FIXTURE_H_
#define SLUICE_RUNTIME_CONTROLLER_TESTING_PIPELINE_FIXTURE_H_

#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

#include "core/policy/pipeline.h"
#include "core/registry/policy_registry.h"
#include "core/resource/cluster.h"
#include "runtime/controller/testing/controller_fixture.h"

namespace sluice::runtime {

// What the test scripts and what the scaler saw (Observe/Decide run on the controller's loop).
struct PipelineScript {
  absl::Mutex mu;
  std::deque<core::PipelineDecision> decisions ABSL_GUARDED_BY(mu);
  std::vector<std::vector<core::PipelineStageSample>> windows ABSL_GUARDED_BY(mu);
  std::vector<core::FunctionTraits> traits ABSL_GUARDED_BY(mu);
  absl::Duration slo ABSL_GUARDED_BY(mu);
  int decides ABSL_GUARDED_BY(mu) = 0;
  std::vector<core::InstanceDemand> demands ABSL_GUARDED_BY(mu);  // every Place, in order
};

class FakePipelineScaler final : public core::PipelineScaler {
 public:
  explicit FakePipelineScaler(std::shared_ptr<PipelineScript> s) : s_(std::move(s)) {}
  std::string_view name() const override { return "fake-pipeline"; }
  void Observe(const std::vector<core::PipelineStageSample>& samples, absl::Time) override {
    absl::MutexLock lock(&s_->mu);
    s_->windows.push_back(samples);
  }
  core::PipelineDecision Decide(absl::Time, int) override {
    absl::MutexLock lock(&s_->mu);
    ++s_->decides;
    if (s_->decisions.empty())
      return {};
    core::PipelineDecision d = std::move(s_->decisions.front());
    s_->decisions.pop_front();
    return d;
  }
  absl::Time NextWakeup() const override { return absl::InfiniteFuture(); }

 private:
  std::shared_ptr<PipelineScript> s_;
};

// First GPU with room for the memory and the limit (a test placement, not a policy); records
// every demand it is asked to place.
class FirstFit final : public core::PlacementPolicy {
 public:
  explicit FirstFit(std::shared_ptr<PipelineScript> s) : s_(std::move(s)) {}
  std::string_view name() const override { return "first-fit"; }
  absl::StatusOr<std::vector<core::GpuId>> Place(const core::InstanceDemand& d,
                                                 const core::ClusterState& state) override {
    {
      absl::MutexLock lock(&s_->mu);
      s_->demands.push_back(d);
    }
    for (const core::GpuState& g : state.gpus()) {
      if (g.memory_free() >= d.memory_per_gpu && g.sum_limit + d.quota.limit <= 1.0 + 1e-9)
        return std::vector<core::GpuId>{g.id};
    }
    return absl::ResourceExhaustedError("no GPU");
  }

 private:
  std::shared_ptr<PipelineScript> s_;
};

// dilu's set with first-fit placement and a pipeline scaler (delegates everything else).
class WithPipelineScaler final : public core::PolicySet {
 public:
  WithPipelineScaler(std::unique_ptr<core::PolicySet> inner, std::shared_ptr<PipelineScript> s)
      : inner_(std::move(inner)), s_(s), placement_(std::move(s)) {}
  std::string_view name() const override { return "test-pipeline"; }
  core::PlacementPolicy& placement() override { return placement_; }
  core::SmQuota QuotaFor(const core::FunctionTraits& f) const override {
    return inner_->QuotaFor(f);
  }
  std::unique_ptr<core::HorizontalScaler> MakeScaler(const core::FunctionTraits& f) const override {
    return inner_->MakeScaler(f);
  }
  std::unique_ptr<core::VerticalController> MakeVerticalController(core::GpuId gpu) const override {
    return inner_->MakeVerticalController(gpu);
  }
  std::unique_ptr<core::PipelineScaler> MakePipelineScaler(
      const std::vector<core::FunctionTraits>& stages,
      const std::vector<core::PipelineStageTraits>& stage_traits,
      absl::Duration slo) const override {
    absl::MutexLock lock(&s_->mu);
    s_->traits = stages;
    s_->slo = slo;
    return std::make_unique<FakePipelineScaler>(s_);
  }
  bool work_conserving() const override { return inner_->work_conserving(); }

 private:
  std::unique_ptr<core::PolicySet> inner_;
  std::shared_ptr<PipelineScript> s_;
  FirstFit placement_;
};

inline std::shared_ptr<PipelineScript> RegisterFakePipelinePolicy() {
  auto script = std::make_shared<PipelineScript>();
  core::RegisterPolicy(
      "test-pipeline",
      [script](std::span<const core::PolicyParam> params,
               const std::string& file) -> absl::StatusOr<std::unique_ptr<core::PolicySet>> {
        absl::StatusOr<std::unique_ptr<core::PolicySet>> dilu =
            core::MakePolicySet("dilu", params, file);
        if (!dilu.ok())
          return dilu.status();
        return std::make_unique<WithPipelineScaler>(*std::move(dilu), script);
      });
  return script;
}

inline std::string PipelineYaml(const std::string& name, const std::string& policy) {
  return absl::StrCat("name: ", name, R"(
kind: inference
command: ["./serve"]
model: {path: /models/m, name: big}
slo_ms: 90
memory_gib: 1
batching: {max_batch: 4}
autoscaling: {min: 1, max: 3}
quota: {request: 0.2, limit: 0.25}
policy: )",
                      policy,
                      "\npolicy_params: {window_s: 600, phi_out: 2, phi_in: 4}\n"
                      "pipeline: {stages: 3}\n");
}

class ControllerPipelineTest : public ControllerTest {
 protected:
  // Replaces the fixture's agent by one with `gpus` GPUs of 16 GiB, then starts the daemon.
  void StartWithAgentOf(int gpus) {
    agent_.reset();
    auto agent = FakeAgent::Start(gpus, int64_t{16} << 30, model_);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    options_.agents = {agent_->url()};
    StartDaemon();
  }
  // The stage's min = 1 instance is routed. A stage that turned ready while the other stages'
  // profiling instances still held the GPUs is unschedulable until something asks again: a
  // wake, as the gateway's first request would send.
  bool WaitOneInstance(const std::string& stage) {
    return WaitFor([&] {
      if (RoutedInstances(stage) == 0)
        Call("POST", "/internal/v1/wake", json{{"name", stage}}.dump());
      return RoutedInstances(stage) == 1;
    });
  }
  void LoadAll(const std::string& pipeline, double rps, double cv, double latency_ms) {
    json fns = json::array();
    for (int i = 0; i < 3; ++i) {
      fns.push_back({{"name", absl::StrCat(pipeline, "-s", i)},
                     {"rps", rps * (i + 1)},
                     {"queued", i},
                     {"arrival_cv", cv},
                     {"latency_ms", latency_ms}});
    }
    const http::Response r =
        Call("POST", "/internal/v1/load", json{{"at_ms", 0}, {"functions", fns}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
  }
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_TESTING_PIPELINE_FIXTURE_H_
