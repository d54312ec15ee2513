// ControllerCore: profiling orchestration. The loop places the profiling instance (an exclusive
// <1, 1> quota when a GPU is free) and hands the blocking job to a worker thread, which posts the
// result back; the admin API stays responsive meanwhile (state "profiling").
#include <utility>

#include "absl/strings/str_cat.h"

#include "runtime/controller/controller_core.h"
#include "runtime/controller/profiling_job.h"

namespace sluice::runtime {

void ControllerCore::StartProfiling(ControllerFunction& f) {
  const int64_t id = NextInstanceId();
  absl::StatusOr<std::vector<common::GpuId>> gpus = Allocate(f, id, {1.0, 1.0}, true);
  if (!gpus.ok()) {
    SetFailed(f, absl::StrCat("profiling: no GPU: ", gpus.status().message()));
    return;
  }
  const int agent = gpu_agent_[(*gpus)[0].value()];
  ProfilingJob job;
  job.spec = f.record.spec;
  job.agent = agents_[agent].endpoint;
  job.instance_id = id;
  for (size_t g = 0; g < agents_[agent].gpu_ids.size(); ++g) {
    if (agents_[agent].gpu_ids[g] == (*gpus)[0])
      job.gpu = agents_[agent].gpus[g];
  }
  job.gpu_uuids = GpuUuidsOn(agents_[agent], *gpus);
  job.profiler = options_.profiler;
  job.trial_iterations = options_.trial_iterations;
  job.ready_timeout = options_.profile_ready_timeout;
  ControllerInstance i;
  i.id = id;
  i.function = f.record.spec.name;
  i.agent = agent;
  i.gpus = *gpus;
  i.gpu_uuid = job.gpu.uuid;
  i.request = i.limit = 1.0;
  i.profiling = true;
  i.allocated = true;
  instances_.emplace(id, std::move(i));
  f.record.state = FunctionState::kProfiling;
  f.record.profiling_instance = id;
  (void)Persist(f);

  absl::MutexLock lock(&workers_mu_);
  if (stopping_.load())
    return;
  const std::string name = f.record.spec.name;
  workers_.emplace_back([this, job = std::move(job), name] {
    absl::StatusOr<ProfileInfo> result = RunProfilingJob(job, stopping_);
    if (stopping_.load())
      return;
    loop_.Post([this, name, id = job.instance_id, result = std::move(result)]() mutable {
      OnProfiled(name, id, std::move(result));
    });
  });
}

void ControllerCore::OnProfiled(const std::string& name, int64_t instance,
                                absl::StatusOr<ProfileInfo> result) {
  Erase(instance);  // the job deleted it on the agent
  auto it = functions_.find(name);
  if (it == functions_.end() || it->second.record.state != FunctionState::kProfiling ||
      it->second.record.profiling_instance != instance) {
    return;  // deleted (or re-deployed) meanwhile
  }
  ControllerFunction& f = it->second;
  if (!result.ok()) {
    SetFailed(f, absl::StrCat("profiling: ", result.status().message()));
    return;
  }
  if (auto c = trials_metric_->WithLabels({name}); c.ok())
    (*c)->Inc(result->trials);
  SetReady(f, *result);
}

void ControllerCore::StopWorkers() {
  stopping_.store(true);
  std::vector<std::thread> workers;
  {
    absl::MutexLock lock(&workers_mu_);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) {
    if (t.joinable())
      t.join();
  }
}

}  // namespace sluice::runtime
