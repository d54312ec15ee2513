// Test doubles for pipeline functions in the engine (issue 11): a scripted PipelineScaler (fixed
// decisions at fixed times, records every sample it saw) and a queue-step scaler that scales one
// stage by its queue, plus helpers that add linear-latency stage models to a PerfModel and build
// a pipeline's stage functions. Header-only; not thread-safe.
#ifndef SLUICE_SIM_ENGINE_TESTING_FAKE_PIPELINE_H_
#define SLUICE_SIM_ENGINE_TESTING_FAKE_PIPELINE_H_

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

#include "core/perf/perf_model.h"
#include "core/policy/pipeline.h"
#include "core/registry/policy_registry.h"
#include "sim/engine/sim_config.h"
#include "sim/engine/testing/fake_policy.h"

namespace sluice::sim::testing {

// Adds model `name` (LinearLatency(base, per_extra)) with `params` bytes of parameters.
inline void AddLinearModel(core::PerfModel& perf, const std::string& name, absl::Duration base,
                           core::Bytes params = core::Bytes::GiB(1),
                           absl::Duration per_extra = absl::ZeroDuration()) {
  core::ModelInfo info;
  info.name = name;
  info.param_bytes = params;
  info.gpu_memory = core::Bytes::GiB(2);
  absl::Status s = perf.Add(info, std::make_unique<LinearLatency>(base, per_extra, base));
  (void)s;
}

// Stage `index` of `count` of pipeline `pipeline`, named "<pipeline>/s<index>", on `model`.
inline FunctionConfig StageFunction(const std::string& pipeline, int index, int count,
                                    const std::string& model, core::Bytes activation_out) {
  FunctionConfig f;
  f.name = absl::StrCat(pipeline, "/s", index);
  f.model = model;
  f.quota = core::SmQuota{1, 1};
  f.memory = core::Bytes::GiB(2);
  f.slo = absl::Seconds(1);
  f.initial_instances = 1;
  f.min_instances = 1;
  PipelineStageConfig st;
  st.pipeline = pipeline;
  st.index = index;
  st.count = count;
  st.activation_out = activation_out;
  f.stage = st;
  return f;
}

inline PipelineConfig PipelineOf(const std::string& name, const std::vector<FunctionConfig>& fs,
                                 absl::Duration slo) {
  PipelineConfig p;
  p.name = name;
  for (const FunctionConfig& f : fs)
    p.stages.push_back(f.name);
  p.slo = slo;
  return p;
}

// Returns each scripted decision once, at the first Decide() at or after its time; zero deltas
// otherwise. Records the samples and free CPU cores it was given.
class ScriptedPipelineScaler : public core::PipelineScaler {
 public:
  ScriptedPipelineScaler(int stages, std::vector<std::pair<absl::Time, core::PipelineDecision>> s)
      : stages_(stages), script_(std::move(s)) {}
  std::string_view name() const override { return "scripted-pipeline"; }
  void Observe(const std::vector<core::PipelineStageSample>& s, absl::Time now) override {
    samples.push_back(s);
    observed_at.push_back(now);
  }
  core::PipelineDecision Decide(absl::Time now, int free_cpu_cores) override {
    free_cores.push_back(free_cpu_cores);
    core::PipelineDecision d;
    d.stages.resize(stages_);
    if (next_ < script_.size() && script_[next_].first <= now)
      d = script_[next_++].second;
    return d;
  }
  absl::Time NextWakeup() const override { return absl::InfiniteFuture(); }

  std::vector<std::vector<core::PipelineStageSample>> samples;
  std::vector<absl::Time> observed_at;
  std::vector<int> free_cores;

 private:
  int stages_;
  std::vector<std::pair<absl::Time, core::PipelineDecision>> script_;
  size_t next_ = 0;
};

// One decision with `replicas` / `cpu` deltas for stage `stage` of `count` (key when replicas > 0).
inline core::PipelineDecision StageDelta(int count, int stage, int replicas, int cpu = 0) {
  core::PipelineDecision d;
  d.stages.resize(count);
  d.stages[stage].replica_delta = replicas;
  d.stages[stage].cpu_worker_delta = cpu;
  d.stages[stage].key = replicas > 0;
  if (replicas > 0)
    d.key_stages.push_back(stage);
  return d;
}

// Scales stage `stage` only: one GPU replica more (a key stage) while its queue is above `high`
// requests; one fewer when its queue is empty and its arrivals fit in one replica fewer at
// `fill` of the profiled capacity. One step per window.
class QueueStepPipelineScaler : public core::PipelineScaler {
 public:
  QueueStepPipelineScaler(std::vector<core::FunctionTraits> stages, int stage, double high,
                          double fill = 0.8)
      : stages_(std::move(stages)), stage_(stage), high_(high), fill_(fill) {}
  std::string_view name() const override { return "queue-step"; }
  void Observe(const std::vector<core::PipelineStageSample>& s, absl::Time) override {
    last_ = s;
    decided_ = false;
  }
  core::PipelineDecision Decide(absl::Time, int) override {
    core::PipelineDecision d;
    d.stages.resize(stages_.size());
    if (decided_ || last_.empty())
      return d;
    decided_ = true;
    const core::PipelineStageSample& s = last_[stage_];
    const int replicas = s.ready_replicas + s.starting_replicas;
    const double cap = stages_[stage_].capacity_rps * fill_;
    if (s.queue_length > high_ && s.starting_replicas == 0) {
      d.stages[stage_].replica_delta = 1;
      d.stages[stage_].key = true;
      d.key_stages.push_back(stage_);
    } else if (s.queue_length == 0 && replicas > 1 && s.arrival_rps < cap * (replicas - 1)) {
      d.stages[stage_].replica_delta = -1;
    }
    return d;
  }
  absl::Time NextWakeup() const override { return absl::InfiniteFuture(); }

 private:
  std::vector<core::FunctionTraits> stages_;
  int stage_;
  double high_;
  double fill_;
  std::vector<core::PipelineStageSample> last_;
  bool decided_ = true;
};

}  // namespace sluice::sim::testing

#endif  // SLUICE_SIM_ENGINE_TESTING_FAKE_PIPELINE_H_
