// Engine: one simulation run of a SimConfig under one PolicySet and one workload variant, on a
// SimEnv (virtual time, jumps to the next event). Owns the cluster books (ClusterState), the
// instances, the fluid GPU model, the vertical-controller driver and the metrics; turns policy
// decisions (Place, Desired, Issue, and a hybrid scaler's Decide) into effects. RunSimulation
// (simulation.h) is the public entry; tests and the benchmark may build an Engine with their own
// PolicySet. Not thread-safe.
#ifndef SLUICE_SIM_ENGINE_ENGINE_H_
#define SLUICE_SIM_ENGINE_ENGINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "common/sim_env.h"
#include "core/net/flow_network.h"
#include "core/net/topology.h"
#include "core/perf/perf_model.h"
#include "core/registry/policy_registry.h"
#include "core/resource/cluster.h"
#include "core/resource/fragmentation.h"
#include "sim/engine/fluid_window.h"
#include "sim/engine/gateway.h"
#include "sim/engine/gpu_share.h"
#include "sim/engine/host_cache.h"
#include "sim/engine/instance.h"
#include "sim/engine/metrics.h"
#include "sim/engine/pipeline_stats.h"
#include "sim/engine/sim_config.h"
#include "sim/engine/simulation.h"
#include "sim/engine/vertical_driver.h"
#include "sim/workload/arrivals.h"
#include "sim/workload/prefetch.h"
#include "sim/workload/random.h"

namespace sluice::sim {

class Engine : public GpuShareModel::Listener {
 public:
  // Validates the inputs against `perf` and `policy` and loads the workloads; errors as
  // documented for RunSimulation. `label` names the policy in RunResult. `log` may be null.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(
      const SimConfig& config, std::unique_ptr<core::PolicySet> policy, std::string label,
      const WorkloadVariant& workload, const core::PerfModel& perf, std::string_view config_file,
      TimelineSink* log);
  ~Engine() override;

  // Runs to the end (horizon + drain) once. Fails if an initial instance cannot be placed or a
  // policy returns an impossible decision.
  absl::StatusOr<RunResult> Run();

  // Introspection for tests.
  const std::vector<std::unique_ptr<Instance>>& instances() const { return instances_; }
  const core::ClusterState& cluster() const { return cluster_; }
  const HostCache& host_cache(int node) const { return host_cache_[node]; }
  int cpu_cores_used(int node) const { return cpu_used_[node]; }
  int64_t vertical_ticks() const { return vertical_->ticks(); }
  // Fluid windows served in batches of more than one, and skipped as certainly empty.
  int64_t fluid_batched_windows() const { return fluid_batched_windows_; }
  int64_t fluid_skipped_windows() const { return fluid_skipped_windows_; }
  // Quiet samples of exact functions held back in quiet batches.
  int64_t quiet_batched_samples() const { return quiet_batched_samples_; }

 private:
  struct Training {
    bool placed = false;
    bool done = false;
    int32_t instance = -1;
    int64_t iterations = 0;
    absl::Time submitted;
  };
  // A load sample a fluid batch holds back: its time, its rate and what it will see queued (a
  // Poisson draw around queued_mean, plus the backlog).
  struct FluidSample {
    absl::Time at;
    double rps = 0;
    double queued_mean = 0;
    double backlog = 0;
  };
  // Per-function runtime state. The fields every sample, batch and wake-up reads come first, so
  // a visit touches few cache lines of the 50,000 functions' states.
  struct alignas(64) Function {
    std::unique_ptr<core::HorizontalScaler> scaler;
    // Exactly one of scaler and hybrid drives an inference function: the policy's hybrid scaler
    // when it makes one (MakeHybridScaler), otherwise its horizontal scaler + placement.
    std::unique_ptr<core::HybridScaler> hybrid;
    std::unique_ptr<StageState> stage;  // pipeline stages only
    bool is_training() const { return trains; }
    bool trains = false;  // config->training is set (kept here: read at every sample)
    // Scaled by its pipeline's PipelineScaler rather than its own scaler.
    bool pipeline_scaled = false;
    // In the sample list (Sample visits it); false while its scaler skips quiet samples.
    bool sampled = true;
    // Fluid mode (fluid.cc): modelled per sample window while it has an active warm instance.
    bool fluid = false;
    bool fluid_generated = false;  // window counts generated from the source (next_arrival)
    bool fluid_next_primed = false;  // next_arrival drawn (generated counts)
    int parked_deployed = 0;        // of deployed, parked (Park / Unpark / PlaceInstance / Drain)
    std::vector<int32_t> deployed;  // loading or warm
    int64_t interval_arrivals = 0;
    // The scaler's wake-up (sampling.cc, ScheduleWakeup): the armed timer, its time, and the
    // time the next Reconcile is due (InfiniteFuture: none; the timer re-arms when earlier).
    common::Env::TimerId wakeup = 0;
    absl::Time wakeup_at = absl::InfiniteFuture();
    absl::Time wakeup_due = absl::InfiniteFuture();
    // Batched fluid windows (fluid_batch.cc): the samples held back for the scaler, ascending,
    // observed at the sample at fluid_batch_end (skipped by Sample before it).
    absl::Time fluid_batch_end = absl::InfinitePast();
    std::vector<FluidSample> fluid_samples;
    // A quiet batch (quiet_batch.cc): the quiet samples at quiet_from + j x interval,
    // j = 1..quiet_samples, held back.
    int quiet_samples = 0;
    absl::Time quiet_from;
    // Out of the sample list while a batch (fluid or quiet) holds its samples: the sample at
    // which Sample visits it again (RevisitAt).
    absl::Time revisit_at = absl::InfinitePast();
    double fluid_backlog = 0;  // requests fluid windows could not serve yet
    double fluid_queued = 0;   // mean requests waiting in its last fluid window
    std::vector<absl::Time> fluid_pending;  // arrivals of a window run exactly, ascending
    size_t fluid_next = 0;                  // next of fluid_pending to schedule
    std::unique_ptr<ArrivalSource> arrivals;
    std::optional<Arrival> next_arrival;  // the one scheduled on the Env
    const FunctionConfig* config = nullptr;
    const core::ModelEntry* model = nullptr;
    core::SmQuota quota;  // what the policy gives each instance it places
    int max_batch = 1;
    core::FunctionTraits traits;
    Gateway gateway;
    HeldMeter held;  // GPU time held by its instances, and its price
    FunctionMetrics metrics;
    Training training;
    std::unique_ptr<Rng> service_rng;  // exponential service (validation); out of line: 2.5 KB
  };

  Engine(const SimConfig& config, std::unique_ptr<core::PolicySet> policy, std::string label,
         const core::PerfModel& perf, TimelineSink* log);
  absl::Status Init(const WorkloadVariant& workload, std::string_view config_file);
  absl::Status InitFunction(size_t index, const WorkloadSpec& spec, std::string_view file);
  absl::Status InitPrices(std::string_view file);
  absl::Status MakeScalers(Function& f);
  absl::Status CheckFunction(size_t index, std::string_view file) const;
  absl::Status StartRun();
  RunResult Collect();
  double DeriveCapacity(const Function& f) const;
  absl::Duration CachedStart(const Function& f) const;
  void AddFgdTask(const core::TaskClass& t);

  // Request path (requests.cc).
  void ScheduleNextArrival(int fn);
  void OnArrival(int fn, const Arrival& a);
  void Dispatch(int fn, const Request& r);
  void Enqueue(Instance& inst, const Request& r);
  void MaybeStartBatch(Instance& inst);
  void StartBatch(Instance& inst, int64_t size);
  WorkItem MakeBatchWork(Function& f, const Instance& inst);
  void FinishBatch(Instance& inst);
  void OnWorkDone(int32_t instance) override;
  void FlushHeld(int fn);
  void DropUnservable(int fn);
  // Requests waiting at a pipeline stage changed by `delta` (no-op for other functions).
  void Waiting(int fn, double delta);

  // Pipelines (pipeline.cc): validation, stage chaining and activation transfers, results.
  absl::Status CheckPipelines(std::string_view file) const;
  absl::Status CheckStage(size_t index, const WorkloadSpec& spec, std::string_view file) const;
  absl::Status InitPipelines(std::string_view file);
  absl::Status InitNetwork(std::string_view file);
  int32_t NewPipeRequest(absl::Time origin);
  void OnStageArrival(int fn);
  // Hands `inst` the request: at once, or after the activation transfer into a pipeline stage.
  void Deliver(Instance& inst, const Request& r);
  void ArriveAtStage(int32_t pipe_request);
  void OnFlowsDone(const std::vector<core::net::FlowId>& done);
  void ScheduleNet();
  core::net::Path PathBetween(const Instance& from, const Instance& to) const;
  // A request finished stage `fn` on instance `from`: on to the next stage, or done.
  void StageDone(int fn, const Request& r, int32_t from);
  PipelineResult SummarizePipeline(int p);  // pipeline_results.cc
  StageResult SummarizeStage(int fn);

  // Pipeline scaling and CPU workers (pipeline_scaling.cc).
  void SamplePipelines(const std::vector<double>& rps);
  core::PipelineStageSample StageSample(int fn, double rps);
  void DecidePipeline(int p);
  void SchedulePipelineWakeup(int p);
  void ApplyPipelineDecision(const std::vector<int>& stages, const core::PipelineDecision& d);
  // Places the scale-outs `want` (per stage, >= 0) in core::ScaleOutOrder's order.
  void GrantScaleOuts(const std::vector<int>& stages, const std::vector<int>& want);
  void ApplyCpuDelta(int fn, int delta);
  void DrainLeastLoaded(const std::vector<int32_t>& ids, int n);
  // The node for a CPU worker of `cores` cores (-1: none has room); `cached`: it holds f's model.
  int PickCpuNode(const Function& f, int cores, bool* cached) const;
  absl::Status StartCpuWorker(int fn);
  void StartCpuBatch(Instance& inst);
  int FreeCpuCores() const;
  std::vector<core::NodeId> CachedOn(const Function& f) const;

  // Lifecycle and scaling (lifecycle.cc).
  // `parked`: placed and started memory-only (core::ParkedQuota()), for scalers whose
  // ActiveWanted() is below the instances that already hold a share.
  absl::Status PlaceInstance(int fn, bool initial, bool parked = false);
  absl::StatusOr<std::vector<core::GpuId>> ChooseGpus(int fn, common::InstanceId iid,
                                                       const core::SmQuota& quota);
  absl::Status Commit(int fn, common::InstanceId iid, const std::vector<core::GpuId>& gpus,
                      const core::SmQuota& quota);
  void Launch(int fn, common::InstanceId iid, std::vector<core::GpuId> gpus,
              const core::SmQuota& quota, int max_batch, bool initial);
  // Starts (sign +1) or stops (-1) counting `quota` held on `gpus` towards fn's cost.
  void Hold(int fn, const std::vector<core::GpuId>& gpus, const core::SmQuota& quota, double sign);
  // min(1, sum of request x time quota) of a GPU: its contribution to allocated_share_.
  static double AllocatedShare(const core::GpuState& g);
  double AllocatedOn(const std::vector<core::GpuId>& gpus) const;
  absl::Duration ColdStartTime(const Function& f, const std::vector<core::GpuId>& gpus,
                               bool* host_cache_hit) const;
  void BecomeWarm(int32_t id);
  void CacheParams(const Instance& inst);
  void Drain(int32_t id);
  void Retire(int32_t id);
  void ReleaseResources(Instance& inst);
  void Sample();
  void MergeSampleAdds();
  void SampleListed(double interval_s, std::vector<double>& rps);
  bool SampleFunction(int fn, double rps);
  void Reconcile(int fn);
  void ScheduleWakeup(int fn);
  void ArmWakeup(int fn, absl::Time at);  // the wake-up timer at `at` (ScheduleWakeup)

  // Memory-only idle instances and the idle / cold-start metrics (parking.cc).
  // Parks or un-parks fn's warm instances so that ActiveWanted() of them hold their share.
  void ApplyParking(int fn);
  // Swaps the quota of a deployed instance in every book (ClusterState, placement, cost, fluid
  // model) without counting a vertical scaling.
  void Requota(int32_t id, const core::SmQuota& quota);
  void Park(int32_t id);
  void Unpark(int32_t id);
  // Deployed instances that hold their SM share.
  int ActiveCount(const Function& f) const;
  // Something was dispatched to an idle instance / the last request left it.
  void MarkBusy(Instance& inst);
  void MarkIdle(Instance& inst);
  // Adds the idle memory of `inst` since idle_since up to `until` (clipped to the horizon).
  void CountIdle(const Instance& inst, absl::Time until);
  // The gateway's wake from zero (StartTraits::wake_from_zero): fn has held requests and no
  // deployed instance.
  void WakeFromZero(int fn);

  // Hybrid scaling (hybrid.cc): Decide() with the deployed pods, then each action in order; an
  // action the cluster rejects is skipped, counted and logged.
  void ReconcileHybrid(int fn);
  absl::Status ApplyAction(int fn, const core::ScalingAction& a);
  absl::Status ApplySetQuota(int fn, const core::ScalingAction& a);
  absl::Status ApplyAdd(int fn, const core::ScalingAction& a);
  // The dense id of `instance` if it is a deployed instance of `fn`.
  absl::StatusOr<int32_t> DeployedOf(int fn, common::InstanceId instance) const;
  void OnHorizon();
  void ReportCluster();
  void Fail(absl::Status s);

  // Training jobs (training.cc).
  void SubmitTraining(int fn);
  void StartIteration(Instance& inst);
  void FinishIteration(Instance& inst);
  void SummarizeTraining(int fn);

  // Fluid mode (fluid.cc; sim_config.h: FluidConfig).
  void InitFluid();
  void StartDrawThread();
  bool FluidEligible(const Function& f) const;
  // Every fluid function's window [now, now + sample interval): counted and modelled, or its
  // arrivals scheduled exactly when no warm instance holds its share.
  void FluidWindows();
  void FluidWindow(int fn, absl::Time end);
  // Arrivals of fn in [from, end): generated or drawn; their times in fluid_pending if `times`.
  int64_t TakeWindowArrivals(int fn, absl::Time from, absl::Time end, bool times);
  // A generated function's next_arrival: the first arrival not yet taken (drawn once).
  void PrimeFluidArrivals(Function& f);
  void ServeFluid(int fn, const std::vector<int32_t>& active, int64_t n, double window_s);
  FluidBatches FluidModel(const Function& f, const std::vector<int32_t>& active) const;
  FluidWindowStats SolveFluid(const Function& f, FluidBatches& m, int c, double lambda) const;
  FluidServed ServeWindow(Function& f, const FluidWindowStats& st, int64_t n, double window_s);
  void FluidIdle(const std::vector<int32_t>& active, double rho, double idle_s, double window_s);
  // Batched fluid windows (fluid_batch.cc; FluidConfig::batch_samples > 1).
  void FluidBatchRound();
  int FluidIdleWindows(int fn);
  core::HorizontalScaler::SamplePromise FluidBatchPromise(int fn) const;
  int FluidBatch(int fn, const core::HorizontalScaler::SamplePromise& p);
  void FluidBatchWindow(int fn, FluidBatches& m, absl::Time from, FluidBatchTally& tally);
  // Quiet batches of rarely invoked functions (quiet_batch.cc; SimConfig::quiet_batch_samples).
  bool StartQuietBatch(int fn, const core::LoadSample& last);
  void FlushQuietSamples(int fn, absl::Time before, bool drop_rest);
  // fn back into the sample list at the sample at `at` (within the calendar's reach), and those
  // due now (at the start of Sample).
  void RevisitAt(int fn, absl::Time at);
  void Revisits();
  // Observes fn's held-back samples with times before `until` (at or before it if `inclusive`);
  // returns the last one observed (a default sample when none).
  core::LoadSample FlushFluidSamples(int fn, absl::Time until, bool inclusive);
  void ScheduleFluidArrival(int fn);
  int FluidQueuedNow(const Function& f);
  // Share and interference slowdown a fluid instance can expect on its first GPU.
  double FluidShare(const Instance& inst, double* slow) const;

  // Event log (no-op when log_ is null).
  template <typename... Args>
  void Log(int fn, const Args&... args);
  std::string FormatNow() const;

  const SimConfig& config_;
  std::unique_ptr<core::PolicySet> policy_;
  std::string label_;
  std::string workload_name_;
  const core::PerfModel& perf_;
  TimelineSink* log_;
  common::SimEnv env_;
  absl::Time start_;
  absl::Time horizon_;
  bool after_horizon_ = false;
  core::ClusterState cluster_;
  GpuShareModel shares_;
  std::unique_ptr<VerticalDriver> vertical_;
  std::vector<Function> fns_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<int32_t> gateway_positions_;  // shared by every function's Gateway
  std::vector<HostCache> host_cache_;  // per node: model parameters in host memory (LRU)
  std::vector<int> cpu_used_;          // per node: cores held by CPU workers
  std::vector<PipelineState> pipes_;
  std::vector<PipeRequest> pipe_reqs_;
  std::vector<int32_t> free_pipe_reqs_;
  std::optional<core::net::Topology> topology_;  // pipelines only
  std::unique_ptr<core::net::FlowNetwork> net_;
  std::vector<core::net::GpuLoc> gpu_loc_;       // per GPU
  common::Env::TimerId net_timer_ = 0;
  absl::flat_hash_map<core::net::FlowId, int32_t> flow_req_;  // flow -> pipe request
  ClusterMetrics cluster_metrics_;
  core::TargetWorkload fgd_workload_;
  double allocated_share_ = 0;
  std::vector<double> gpu_usd_per_s_;  // per GPU: its node's price per second
  core::StartTraits start_traits_;     // the policy's (issue 13)
  HeldMeter total_held_;               // all functions' held GPU time (large fleets' timeline)
  std::vector<int> sample_list_;       // functions Sample visits, ascending
  std::vector<int> sample_adds_;       // functions to merge back in (arrivals since)
  std::vector<int> fluid_fns_;         // fluid functions, ascending
  std::vector<double> fluid_rho_;      // per instance: busy fraction in its last fluid window
  std::optional<Rng> fluid_rng_;       // fluid windows run exactly: their arrival times
  // Batched fluid windows: fluid functions by the round (FluidWindows call) their next window
  // starts at, modulo batch_samples + 1; the current round.
  std::vector<std::vector<int>> fluid_due_;
  std::vector<int> fluid_round_fns_;
  int64_t fluid_round_ = 0;
  int64_t fluid_batched_windows_ = 0;
  int64_t quiet_batched_samples_ = 0;
  // Functions out of the sample list for a batch, by the sample round (whole intervals since the
  // start, modulo the longest batch + 2) at which Sample visits them again.
  std::vector<std::vector<int>> revisits_;
  int64_t fluid_skipped_windows_ = 0;
  absl::Status error_;
  bool ran_ = false;
  // FluidConfig::draw_thread: serves the fluid functions' sources (wrapped in fns_); declared
  // last, so it stops before they go.
  std::unique_ptr<ArrivalPrefetcher> prefetch_;
};

template <typename... Args>
void Engine::Log(int fn, const Args&... args) {
  if (log_ == nullptr)
    return;
  log_->Append(absl::StrCat(FormatNow(), " ", fn < 0 ? std::string("-") : fns_[fn].config->name,
                            " ", args...));
}

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_ENGINE_H_
