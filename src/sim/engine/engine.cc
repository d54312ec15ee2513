// Engine construction, validation and the run itself; the request path, lifecycle/scaling and
// training jobs live in requests.cc, lifecycle.cc and training.cc.
#include "sim/engine/engine.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"

#include "common/status.h"

namespace sluice::sim {
namespace {

// Random stream for exponential service times, distinct from the arrival streams (0..n-1).
constexpr uint64_t kServiceStreamBase = uint64_t{1} << 32;

absl::Status FunctionError(std::string_view file, size_t index, const FunctionConfig& f,
                           absl::string_view field, absl::string_view msg) {
  return common::InputError({std::string(file), 0},
                            absl::StrCat("functions[", index, "] (", f.name, ").", field), msg);
}

double PerThousand(double usd, int64_t requests) {
  return requests > 0 ? usd / static_cast<double>(requests) * 1000.0 : 0.0;
}

}  // namespace

Engine::Engine(const SimConfig& config, std::unique_ptr<core::PolicySet> policy, std::string label,
               const core::PerfModel& perf, TimelineSink* log)
    : config_(config),
      policy_(std::move(policy)),
      label_(std::move(label)),
      perf_(perf),
      log_(log),
      start_(env_.Now()),
      horizon_(start_ + config.horizon),
      cluster_(config.cluster),
      shares_(env_, perf, cluster_.gpu_count(), policy_->work_conserving(), *this),
      cpu_used_(cluster_.node_count(), 0),
      cluster_metrics_(start_, config.horizon),
      start_traits_(policy_->start_traits()) {
  for (const core::NodeSpec& n : config.cluster.nodes)
    host_cache_.emplace_back(n.host_memory);
  vertical_ = std::make_unique<VerticalDriver>(env_, *policy_, shares_, cluster_);
  if (log_ != nullptr) {
    vertical_->SetShareLog([this](int32_t id, core::GpuId gpu, double cap, std::string_view state) {
      Log(instances_[id]->function(), "share inst=", id, " gpu=", gpu.value(),
          absl::StrFormat(" cap=%.3f", cap), " state=", std::string(state));
    });
  }
}

Engine::~Engine() = default;

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const SimConfig& config, std::unique_ptr<core::PolicySet> policy, std::string label,
    const WorkloadVariant& workload, const core::PerfModel& perf, std::string_view config_file,
    TimelineSink* log) {
  if (policy == nullptr)
    return absl::InvalidArgumentError("no policy");
  std::unique_ptr<Engine> e(new Engine(config, std::move(policy), std::move(label), perf, log));
  SLUICE_RETURN_IF_ERROR(e->Init(workload, config_file));
  return e;
}

absl::Status Engine::Init(const WorkloadVariant& workload, std::string_view config_file) {
  const std::string file(config_file);
  if (config_.horizon <= absl::ZeroDuration()) {
    return common::InputError({file, 0}, "horizon", "must be > 0");
  }
  if (config_.sample_interval <= absl::ZeroDuration()) {
    return common::InputError({file, 0}, "sample_interval", "must be > 0");
  }
  if (cluster_.gpu_count() == 0)
    return common::InputError({file, 0}, "cluster", "has no GPUs");
  SLUICE_RETURN_IF_ERROR(InitPrices(config_file));
  workload_name_ = workload.name;
  SLUICE_RETURN_IF_ERROR(CheckPipelines(config_file));
  fns_.resize(config_.functions.size());
  total_held_ = HeldMeter(start_, horizon_);
  sample_list_.resize(fns_.size());
  for (size_t i = 0; i < fns_.size(); ++i)
    sample_list_[i] = static_cast<int>(i);
  for (size_t i = 0; i < config_.functions.size(); ++i) {
    const FunctionConfig& fc = config_.functions[i];
    const WorkloadSpec* spec = &fc.workload;
    for (const auto& [name, s] : workload.overrides) {
      if (name == fc.name)
        spec = &s;
    }
    SLUICE_RETURN_IF_ERROR(CheckStage(i, *spec, config_file));
    SLUICE_RETURN_IF_ERROR(InitFunction(i, *spec, config_file));
  }
  return InitPipelines(config_file);
}

// Price per second of each GPU, from its node's price per hour.
absl::Status Engine::InitPrices(std::string_view file) {
  const std::vector<double>& prices = config_.gpu_price_per_hour;
  if (!prices.empty() && prices.size() != config_.cluster.nodes.size()) {
    return common::InputError({std::string(file), 0}, "cluster.gpu_price_per_hour",
                              absl::StrCat("has ", prices.size(), " entries for ",
                                           config_.cluster.nodes.size(), " nodes"));
  }
  gpu_usd_per_s_.assign(cluster_.gpu_count(), 0.0);
  if (prices.empty())
    return absl::OkStatus();
  for (size_t n = 0; n < prices.size(); ++n) {
    if (!(prices[n] >= 0) || !std::isfinite(prices[n])) {
      return common::InputError({std::string(file), 0}, "cluster.gpu_price_per_hour",
                                absl::StrCat("must be a finite number >= 0, got ", prices[n]));
    }
  }
  for (const core::GpuState& g : cluster_.gpus())
    gpu_usd_per_s_[g.id.value()] = prices[g.node.value()] / 3600.0;
  return absl::OkStatus();
}

absl::Status Engine::InitFunction(size_t i, const WorkloadSpec& spec, std::string_view file) {
  const FunctionConfig& fc = config_.functions[i];
  Function& f = fns_[i];
  f.config = &fc;
  f.trains = fc.training.has_value();
  std::vector<double> sweep_ms;
  for (const double m : fc.slo_sweep_multipliers) sweep_ms.push_back(fc.slo_sweep_base_ms * m);
  f.metrics = FunctionMetrics(fc.slo, std::move(sweep_ms));
  f.held = HeldMeter(start_, horizon_);
  f.gateway.set_position_table(&gateway_positions_);
  SLUICE_RETURN_IF_ERROR(CheckFunction(i, file));
  f.model = *perf_.Find(fc.model);
  f.max_batch = fc.exponential_service_mean ? 1 : fc.max_batch;
  f.traits.id = common::FunctionId(static_cast<int64_t>(i));
  f.traits.kind = fc.training ? core::FunctionKind::kTraining : fc.kind;
  f.traits.profiled = fc.quota;
  f.traits.min_instances = fc.min_instances;
  f.traits.max_instances = fc.max_instances;
  f.traits.slo_sensitive = !fc.training.has_value();
  f.traits.capacity_rps = fc.capacity_rps > 0 ? fc.capacity_rps : DeriveCapacity(f);
  f.traits.latency = f.model->latency;
  f.traits.max_batch = f.max_batch;
  f.traits.slo = fc.slo;
  f.traits.memory = fc.memory;
  f.traits.cached_start = CachedStart(f);
  f.quota = policy_->QuotaFor(f.traits);
  if (absl::Status s = core::ValidateQuota(f.quota); !s.ok()) {
    return absl::InternalError(absl::StrCat("policy ", std::string(policy_->name()),
                                            " gave function ", fc.name,
                                            " an invalid quota: ", s.message()));
  }
  const int gpus = fc.training ? fc.training->workers : fc.gpus;
  AddFgdTask(core::TaskClass{gpus, f.quota.request, fc.memory, 1.0});
  if (fc.training)
    return absl::OkStatus();
  SLUICE_RETURN_IF_ERROR(MakeScalers(f));
  SLUICE_ASSIGN_OR_RETURN(
      f.arrivals, MakeArrivalSource(spec, DeriveSeed(config_.seed, i), start_, config_.horizon));
  if (fc.exponential_service_mean) {
    f.service_rng = std::make_unique<Rng>(DeriveSeed(config_.seed, kServiceStreamBase + i));
  }
  return absl::OkStatus();
}

// A hybrid scaler when the policy makes one for the function, else its horizontal scaler.
absl::Status Engine::MakeScalers(Function& f) {
  f.hybrid = policy_->MakeHybridScaler(f.traits);
  if (f.hybrid != nullptr)
    return absl::OkStatus();
  f.scaler = policy_->MakeScaler(f.traits);
  if (f.scaler == nullptr)
    return absl::InternalError("policy made no horizontal scaler");
  return absl::OkStatus();
}

// What the engine relies on; the experiment loader reports these with line numbers first.
absl::Status Engine::CheckFunction(size_t i, std::string_view file) const {
  const FunctionConfig& fc = config_.functions[i];
  if (auto model = perf_.Find(fc.model); !model.ok()) {
    return FunctionError(file, i, fc, "model", model.status().message());
  }
  if (fc.gpus < 1)
    return FunctionError(file, i, fc, "gpus", "must be >= 1");
  if (fc.max_batch < 1)
    return FunctionError(file, i, fc, "max_batch", "must be >= 1");
  if (fc.training && fc.training->workers < 1) {
    return FunctionError(file, i, fc, "training.workers", "must be >= 1");
  }
  if (fc.exponential_service_mean && *fc.exponential_service_mean <= absl::ZeroDuration()) {
    return FunctionError(file, i, fc, "exponential_service_mean", "must be > 0");
  }
  if (absl::Status s = core::ValidateQuota(fc.quota); !s.ok()) {
    return FunctionError(file, i, fc, "quota", s.message());
  }
  return absl::OkStatus();
}

// Functions with identical demands are one FGD task class (FGD's cost grows with the classes).
void Engine::AddFgdTask(const core::TaskClass& t) {
  for (core::TaskClass& c : fgd_workload_.tasks) {
    if (c.gpus == t.gpus && c.share == t.share && c.memory == t.memory) {
      c.weight += t.weight;
      return;
    }
  }
  fgd_workload_.tasks.push_back(t);
}

// A cold start from node 0's host cache with a pre-started process: the pool hand-off plus the
// parameters over PCIe (what a policy with StartTraits::prestarted_pool can expect).
absl::Duration Engine::CachedStart(const Function& f) const {
  if (config_.cluster.nodes.empty())
    return absl::ZeroDuration();
  return config_.cold_start.pool_handoff +
         config_.cluster.nodes[0].pcie_bandwidth.TimeFor(f.model->info.param_bytes);
}

// Requests/s one instance serves at the profiled request share with full batches.
double Engine::DeriveCapacity(const Function& f) const {
  const FunctionConfig& fc = *f.config;
  if (fc.exponential_service_mean) {
    return 1.0 / absl::ToDoubleSeconds(*fc.exponential_service_mean);
  }
  WorkItem w;
  w.model = f.model->latency;
  w.batch = f.max_batch;
  if (f.model->info.kind == core::FunctionKind::kLlmInference) {
    w.kind = WorkItem::Kind::kLlmBatch;
    w.prompt_tokens = fc.default_prompt_tokens * f.max_batch;
    w.output_tokens = fc.default_output_tokens;
  }
  const double secs = w.SecondsAt(fc.quota.request, fc.quota.time_quota);
  return secs > 0 ? f.max_batch / secs : 0;
}

std::string Engine::FormatNow() const {
  return absl::StrFormat("%.6f", absl::ToDoubleSeconds(env_.Now() - start_));
}

void Engine::Fail(absl::Status s) {
  if (error_.ok())
    error_ = std::move(s);
  env_.Stop();
}

absl::StatusOr<RunResult> Engine::Run() {
  SLUICE_CHECK(!ran_);
  ran_ = true;
  SLUICE_RETURN_IF_ERROR(StartRun());
  env_.RunUntil(horizon_ + config_.drain_timeout);
  if (prefetch_ != nullptr)
    prefetch_->Stop();  // the helper's core is free while the results are collected
  SLUICE_RETURN_IF_ERROR(error_);
  return Collect();
}

// t = 0: initial instances (warm), training submissions, the first arrivals and samples.
absl::Status Engine::StartRun() {
  ReportCluster();
  for (size_t i = 0; i < fns_.size(); ++i) {
    const int fn = static_cast<int>(i);
    Function& f = fns_[i];
    if (f.is_training()) {
      f.training.submitted = start_ + f.config->training->submit_at;
      env_.RunAt(f.training.submitted, [this, fn] { SubmitTraining(fn); });
      continue;
    }
    for (int k = 0; k < f.config->initial_instances; ++k) {
      if (absl::Status s = PlaceInstance(fn, /*initial=*/true); !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("initial instance ", k + 1, " of function ", f.config->name,
                                   " cannot be placed under ", label_, ": ", s.message()));
      }
    }
  }
  InitFluid();
  for (size_t i = 0; i < fns_.size(); ++i) {
    if (!fns_[i].is_training() && !fns_[i].fluid)
      ScheduleNextArrival(static_cast<int>(i));
  }
  if (!fluid_fns_.empty())
    env_.RunAt(start_, [this] { FluidWindows(); });
  env_.RunAt(horizon_, [this] { OnHorizon(); });  // before the sample due at the horizon
  env_.RunAt(start_ + config_.sample_interval, [this] { Sample(); });
  return absl::OkStatus();
}

// Whatever is still queued or executing when the run stops counts as dropped.
RunResult Engine::Collect() {
  RunResult result;
  result.policy = label_;
  result.workload = workload_name_;
  std::vector<int64_t> unfinished(fns_.size(), 0);
  for (const auto& inst : instances_) {
    if (inst->state() == InstanceState::kGone)
      continue;
    unfinished[inst->function()] += inst->outstanding();
    if (inst->outstanding() == 0)
      CountIdle(*inst, horizon_);
  }
  int64_t requests = 0;
  for (size_t i = 0; i < fns_.size(); ++i) {
    Function& f = fns_[i];
    f.metrics.OnDrop(unfinished[i] + static_cast<int64_t>(f.gateway.held.size()) +
                     std::llround(f.fluid_backlog));
    if (f.is_training())
      SummarizeTraining(static_cast<int>(i));
    FunctionResult r = f.metrics.Summarize(f.config->name, config_.horizon);
    if (config_.report_theory_mm1 && f.config->exponential_service_mean) {
      const double mu = 1.0 / absl::ToDoubleSeconds(*f.config->exponential_service_mean);
      const double lambda = f.arrivals->MeanRate();
      if (lambda < mu)
        r.theory_mean_ms = 1000.0 / (mu - lambda);
    }
    r.held_gpu_seconds = f.held.share_seconds(horizon_);
    r.cost_usd = f.held.usd(horizon_);
    r.cost_per_1k_requests_usd = PerThousand(r.cost_usd, r.requests);
    result.idle_memory_gib_s += r.idle_memory_gib_s;
    result.cold_start_wait_s += r.cold_start_wait_s;
    result.held_gpu_seconds += r.held_gpu_seconds;
    result.cost_usd += r.cost_usd;
    requests += r.requests;
    result.functions.push_back(std::move(r));
  }
  result.cost_per_1k_requests_usd = PerThousand(result.cost_usd, requests);
  result.cold_start_ms_per_request =
      requests > 0 ? result.cold_start_wait_s * 1000 / static_cast<double>(requests) : 0;
  for (size_t p = 0; p < pipes_.size(); ++p)
    result.pipelines.push_back(SummarizePipeline(static_cast<int>(p)));
  cluster_metrics_.Finish(result);
  result.events = static_cast<int64_t>(env_.events_run());
  return result;
}

}  // namespace sluice::sim
