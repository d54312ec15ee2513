// The profiling job: agent calls are blocking Fetches because the job runs on a worker thread.
#include "runtime/controller/profiling_job.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "runtime/controller/http_trial_runner.h"

namespace sluice::runtime {
namespace {

// Passes trials through and keeps each distinct successful one (the profiler caches repeats).
class RecordingRunner final : public core::TrialRunner {
 public:
  explicit RecordingRunner(core::TrialRunner& inner) : inner_(inner) {}
  absl::StatusOr<core::TrialResult> Run(const core::Trial& trial) override {
    absl::StatusOr<core::TrialResult> r = inner_.Run(trial);
    if (r.ok()) {
      const TrialPoint p{trial.batch, trial.sm_share, absl::ToDoubleMilliseconds(r->latency)};
      if (std::find(points_.begin(), points_.end(), p) == points_.end())
        points_.push_back(p);
    }
    return r;
  }
  std::vector<TrialPoint> points() && { return std::move(points_); }

 private:
  core::TrialRunner& inner_;
  std::vector<TrialPoint> points_;
};

ProfileInfo FromCore(const core::Profile& p, const char* source) {
  ProfileInfo info;
  info.request = p.quota.request;
  info.limit = p.quota.limit;
  info.batch = p.batch;
  info.capacity_rps = p.throughput;
  info.latency_ms = absl::ToDoubleMilliseconds(p.latency);
  info.memory_bytes = p.memory.count();
  info.trials = p.trials;
  info.source = source;
  return info;
}

absl::StatusOr<ProfileInfo> FromSpecQuota(core::TrialRunner& runner, const FunctionSpec& spec) {
  const int batch = spec.kind == FunctionKind::kTraining ? 1 : spec.batching.max_batch;
  SLUICE_ASSIGN_OR_RETURN(core::TrialResult r, runner.Run({spec.quota->request, batch}));
  core::Profile p;
  p.quota = {spec.quota->request, spec.quota->limit};
  p.batch = batch;
  p.throughput = r.throughput;
  p.latency = r.latency;
  p.memory = r.memory;
  p.trials = 1;
  ProfileInfo info = FromCore(p, "spec");
  info.time_quota = spec.quota->time_quota;
  return info;
}

absl::StatusOr<ProfileInfo> ProfileTrials(core::TrialRunner& runner, const FunctionSpec& spec,
                                          const core::ProfilerConfig& config) {
  if (spec.quota)
    return FromSpecQuota(runner, spec);
  core::ProfilerConfig c = config;
  c.max_batch = std::max(1, std::min(c.max_batch, spec.batching.max_batch));
  SLUICE_ASSIGN_OR_RETURN(core::Profiler profiler, core::Profiler::Create(c));
  absl::StatusOr<core::Profile> p =
      spec.kind == FunctionKind::kTraining
          ? profiler.ProfileTraining(runner)
          : profiler.ProfileInference(runner, absl::Microseconds(*spec.slo_ms * 1000.0));
  if (!p.ok())
    return p.status();
  return FromCore(*p, "profiled");
}

}  // namespace

absl::StatusOr<ProfileInfo> ProfileWith(core::TrialRunner& inner, const FunctionSpec& spec,
                                        const core::ProfilerConfig& config) {
  RecordingRunner runner(inner);
  SLUICE_ASSIGN_OR_RETURN(ProfileInfo info, ProfileTrials(runner, spec, config));
  info.points = std::move(runner).points();
  return info;
}

namespace {

absl::Status StartInstance(const ProfilingJob& job) {
  // Trials run batches up to the spec's max_batch.
  StartInstanceArgs args{job.instance_id, job.gpu.uuid,
                         1.0,             1.0,
                         /*restart=*/false, job.spec.batching.max_batch,
                         job.gpu_uuids};
  absl::StatusOr<http::Response> r = http::Fetch(
      job.agent, AgentRequest("POST", "/agent/v1/instances", StartInstanceBody(job.spec, args)));
  if (!r.ok())
    return r.status();
  if (r->status != 201) {
    return absl::FailedPreconditionError(
        absl::StrCat("starting the profiling instance: HTTP ", r->status, ": ", r->body));
  }
  return absl::OkStatus();
}

// Polls the agent until the instance is ready; returns its port.
absl::StatusOr<int> WaitReady(const ProfilingJob& job, const std::atomic<bool>& cancelled) {
  const absl::Time deadline = absl::Now() + job.ready_timeout;
  while (!cancelled.load()) {
    absl::StatusOr<http::Response> r =
        http::Fetch(job.agent, AgentRequest("GET", "/agent/v1/node"));
    if (r.ok() && r->status == 200) {
      SLUICE_ASSIGN_OR_RETURN(NodeReport node, ParseNodeReport(r->body));
      for (const ReportedInstance& i : node.instances) {
        if (i.id != job.instance_id)
          continue;
        if (i.state == "ready")
          return i.port;
        if (IsTerminalAgentState(i.state)) {
          return absl::FailedPreconditionError(
              absl::StrCat("the profiling instance ", i.id, " is ", i.state, " before ready"));
        }
      }
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the profiling instance was not ready within ", absl::FormatDuration(job.ready_timeout)));
    }
    absl::SleepFor(job.poll);
  }
  return absl::CancelledError("profiling cancelled");
}

void DeleteInstance(const ProfilingJob& job) {
  (void)http::Fetch(
      job.agent,
      AgentRequest("DELETE",
                   absl::StrCat("/agent/v1/instances/", job.instance_id,
                                "?drain_ms=0")));  // best effort: the agent reaps it anyway
}

}  // namespace

absl::StatusOr<ProfileInfo> RunProfilingJob(const ProfilingJob& job,
                                            const std::atomic<bool>& cancelled) {
  if (job.spec.command.empty()) {
    return absl::FailedPreconditionError(
        "field 'image': image functions cannot be started by the node agent; use 'command'");
  }
  SLUICE_RETURN_IF_ERROR(StartInstance(job));
  absl::StatusOr<ProfileInfo> result = [&]() -> absl::StatusOr<ProfileInfo> {
    SLUICE_ASSIGN_OR_RETURN(int port, WaitReady(job, cancelled));
    TrialTarget target;
    target.agent = job.agent;
    target.instance_id = job.instance_id;
    target.instance = http::Endpoint{job.agent.host, port};
    target.token_period = job.gpu.period;
    target.iterations = job.trial_iterations;
    target.slo_sensitive = IsSloSensitive(job.spec.kind);
    target.mem_limit_bytes = MemoryLimitBytes(job.spec);
    HttpTrialRunner runner(target);
    return ProfileWith(runner, job.spec, job.profiler);
  }();
  DeleteInstance(job);
  return result;
}

}  // namespace sluice::runtime
