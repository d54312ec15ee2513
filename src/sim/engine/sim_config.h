// SimConfig: everything one simulation run needs, as plain values. The experiment loader
// (src/sim/experiment) builds it from YAML and validates it; the engine (this directory) takes it
// as given. RunResult is what a run produces; the CLI prints it. Value types; not thread-safe.
#ifndef SLUICE_SIM_ENGINE_SIM_CONFIG_H_
#define SLUICE_SIM_ENGINE_SIM_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/policy/placement.h"
#include "core/net/topology.h"
#include "core/policy/pipeline.h"
#include "core/policy/policy_params.h"
#include "core/resource/cluster.h"
#include "sim/workload/workload_spec.h"

namespace sluice::sim {

using core::Bytes;
using core::FunctionKind;
using core::SmQuota;

using core::PolicyParam;

struct PolicyConfig {
  std::string name;  // registry name: exclusive, mps-l, mps-r, dilu, fast-gs+, infless+, tgs, ...
  std::string label;  // shown in output; defaults to name
  std::vector<PolicyParam> params;
};

struct TrainingConfig {
  int workers = 1;                       // data-parallel workers, one GPU each
  int64_t iterations = 1000;             // job length
  absl::Duration submit_at = absl::ZeroDuration();  // offset from the start of the run
  bool same_node = true;
};

// Issue 11 (QUART). One stage of a pipeline function: the experiment loader expands a function
// with `pipeline: {stages: N}` into N stage functions named "<name>/s<i>" whose `model` is the
// stage's perf-model entry (core/perf/pipeline_profile.h). Only stage 0 carries a workload; a
// request completing stage i moves to stage i + 1 after its activations cross the network
// (SimConfig::network) from the GPU that ran stage i to the one that runs stage i + 1.
struct PipelineStageConfig {
  std::string pipeline;                  // PipelineConfig::name
  int index = 0;                         // 0-based position in the pipeline
  int count = 1;                         // stages in the pipeline
  Bytes activation_out;                  // bytes per request sent to stage index + 1
  core::PipelineStageTraits traits;      // service CV, latency target, CPU profile
};

struct FunctionConfig {
  std::string name;
  std::string model;                     // key into core::PerfModel
  FunctionKind kind = FunctionKind::kInference;
  absl::Duration slo = absl::Milliseconds(100);
  int max_batch = 1;
  absl::Duration max_queue_delay = absl::ZeroDuration();
  SmQuota quota;                         // profiled <request, limit> per GPU, and time quota
  Bytes memory = Bytes::GiB(2);          // GPU memory per GPU
  int gpus = 1;                          // GPUs per instance (model shards)
  int min_instances = 0;
  int max_instances = 1 << 20;
  int initial_instances = 1;             // warm at t = 0
  // Serving throughput of one instance (req/s) used by scalers; 0 = derive from the perf model at
  // the quota's request share and max_batch.
  double capacity_rps = 0;
  // Service time override for validation experiments: when set, each request's execution time is
  // exponential with this mean (no perf model, no batching).
  std::optional<absl::Duration> exponential_service_mean;
  // LLM functions (model kind kLlmInference): token counts used for requests whose workload does
  // not carry them (arrivals with 0 prompt / output tokens).
  int default_prompt_tokens = 256;
  int default_output_tokens = 128;
  WorkloadSpec workload;                 // inference only (pipeline stages: stage 0 only)
  std::optional<PipelineStageConfig> stage;  // set: this function is a pipeline stage
  std::optional<TrainingConfig> training;  // kind == kTraining
  // SLO sweep (HAS-GPU Fig. 6): the run also reports the SVR at each threshold
  // slo_sweep_base_ms x multiplier, from the same latencies. Empty: none.
  double slo_sweep_base_ms = 0;
  std::vector<double> slo_sweep_multipliers;
};

// Cold starts: container start, then model load from disk at the node's storage bandwidth, or
// from the host cache at PCIe bandwidth.
struct ColdStartConfig {
  absl::Duration container_start = absl::Seconds(2);
  bool host_cache = true;               // parameters stay in host memory after the first load
  // Added (issue 11): a pipeline stage's CPU worker starts after this, plus reading the stage's
  // parameters from storage when its node's host cache does not hold them (0 by default: QUART's
  // CPU compensator gives a running stage more cores; the worker maps the cached parameters).
  absl::Duration cpu_worker_start = absl::ZeroDuration();
  // Added (issue 13): the cold start's stages as the runtime measures them: process start, then
  // the parameter load (host cache over PCIe, or storage), then the first batch (simulated as any
  // batch). Policies with a pre-started process pool (core::StartTraits::prestarted_pool) pay
  // `pool_handoff` (handing the instance to an already running runtime process with its CUDA
  // context) instead of `container_start`. Default 41 ms: the platform's pooled start measured
  // on the emulated device (claim to ready, docs/PERFORMANCE.md "Cold starts on the platform";
  // docs/longtail.md "Cold-start stages" cites the command).
  absl::Duration pool_handoff = absl::Milliseconds(41);
};

// A named variant of the workloads (runs = workload variants x policies).
struct WorkloadVariant {
  std::string name = "default";
  // Per function name; a function missing here keeps FunctionConfig::workload.
  std::vector<std::pair<std::string, WorkloadSpec>> overrides;
};

// A pipeline function: its stage functions (FunctionConfig names, in order) and the end-to-end
// objectives. Goodput = responses within the SLO per second of the run (QUART's goodput);
// goodput is also reported at slo_base x each multiplier (QUART Fig. 6b: 1x .. 3x the profiled
// standalone inference time).
struct PipelineConfig {
  std::string name;
  std::vector<std::string> stages;
  absl::Duration slo = absl::Seconds(1);
  absl::Duration slo_base = absl::ZeroDuration();  // 0: no sweep
  std::vector<double> slo_multipliers;
};

// Fluid mode (issue 13; approximate, opt-in with a top-level `fluid:` block): inference functions
// whose arrival source's mean rate is at least `min_mean_rps` (and that the engine can model so:
// not training, not pipeline stages, not LLMs, no hybrid scaler, no exponential service, a source
// that draws window counts) are simulated per sample window instead of per request while they have
// a warm instance holding its share: the window's arrival count is drawn, latency and SLO
// violations come from a queueing approximation (src/sim/engine/fluid_queue.h) and are stored as a
// histogram. Windows with no such instance run the exact request path. docs/PERFORMANCE.md has the
// validation against the exact engine.
struct FluidConfig {
  bool enabled = false;
  double min_mean_rps = 1.0;  // > 0
  // Fluid functions below this mean rate count each window's arrivals by generating them from
  // the source (the renewal process's idle gaps, which the parking / keep-alive histograms learn,
  // stay exact; no events); at or above it the count is drawn (DrawCount). >= 0.
  double generate_below_rps = 2.0;
  // Batched windows (>= 1; 1 = off): while a function's scaler promises that the next k samples
  // cannot change a decision (HorizontalScaler::PromiseSamples) and every instance is
  // warm, holds its share and has no exact request, its next min(k, batch_samples) one-interval
  // windows are served at once (one share and queue model per distinct count) and their
  // samples reach the scaler together at the batch's last sample: the same decisions, fewer
  // visits. Windows keep their own counts, backlog and recorded latencies.
  int batch_samples = 1;
  // Draws the fluid functions' window counts and generated arrivals on a helper thread, ahead of
  // the simulation (sim/workload/prefetch.h): each function's source has its own random stream,
  // so the results are bit-identical; the run uses a second core.
  bool draw_thread = false;
};

struct SimConfig {
  std::string experiment;
  uint64_t seed = 1;
  core::ClusterSpec cluster;
  // On-demand price of one GPU of each node for an hour, in US dollars, in cluster.nodes order
  // (cost_usd in the results). Empty = every GPU is free (costs are 0). Each value >= 0.
  std::vector<double> gpu_price_per_hour;
  std::vector<FunctionConfig> functions;
  std::vector<PolicyConfig> policies;
  std::vector<WorkloadVariant> workloads;  // empty = one variant "default"
  absl::Duration horizon = absl::Minutes(10);     // arrivals stop; the run drains after it
  absl::Duration sample_interval = absl::Seconds(1);  // scaler samples and timelines
  // Quiet batches (exact; src/sim/engine/quiet_batch.cc): at most this many quiet samples of a
  // rarely invoked function held back while its scaler promises they change nothing. >= 1;
  // 1 = off. Results are the same either way; only the engine's visits change.
  int quiet_batch_samples = 60;
  // After the horizon the run keeps going until every request and training job finished, but at
  // most this long; whatever is still unfinished then counts as dropped / unfinished.
  absl::Duration drain_timeout = absl::Hours(1);
  ColdStartConfig cold_start;
  std::vector<PipelineConfig> pipelines;  // issue 11; empty: no pipeline functions
  // Links for data movement between GPUs and hosts (activations between pipeline stages today);
  // unset: the engine derives one from `cluster` (documented in the engine README).
  std::optional<core::net::ClusterNetSpec> network;
  bool report_theory_mm1 = false;        // validation: add theory_mean_ms
  FluidConfig fluid;                     // disabled by default: the exact engine
};

struct FunctionResult {
  std::string name;
  int64_t requests = 0;       // arrivals
  int64_t completed = 0;
  int64_t dropped = 0;        // never served (e.g. no capacity before the run ended)
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, mean_ms = 0;
  double svr = 0;             // fraction of requests over SLO (dropped count as violations)
  int64_t cold_starts = 0;
  // Issue 13 cost metrics (src/sim/experiment/README.md names the output fields):
  // GPU memory held by idle instances (placed, nothing dispatched to them: loading, warm with no
  // request, parked) integrated over [0, horizon], in GiB-seconds;
  double idle_memory_gib_s = 0;
  // seconds requests waited for an instance to start or wake: held at the gateway while none
  // was warm, plus un-parking delays; and that total / requests (ms per request).
  double cold_start_wait_s = 0;
  double cold_start_ms_per_request = 0;
  int64_t parks = 0;    // instances parked (memory-only idle)
  int64_t unparks = 0;  // parked instances woken
  // Hybrid scalers (core::HybridScaler): quota changes applied to running instances, and actions
  // the engine skipped because the cluster (or the function's shape) rejected them.
  int64_t vertical_scalings = 0;
  int64_t rejected_actions = 0;
  double throughput_rps = 0;  // completions / run length
  // GPU time held by the function's instances over [0, horizon]: the integral of quota.request x
  // time_quota per GPU from placement to release (exclusive instances hold 1), and its price.
  double held_gpu_seconds = 0;
  double cost_usd = 0;
  double cost_per_1k_requests_usd = 0;  // cost_usd / requests x 1000; 0 without requests
  // Training
  double training_iters_per_s = 0;
  double jct_s = 0;           // job completion time; 0 if unfinished
  std::optional<double> theory_mean_ms;
  // SVR at each FunctionConfig::slo_sweep_multipliers threshold, in that order (dropped requests
  // count as violations at every threshold).
  std::vector<double> sweep_svr;
};

// Fleets of at most this many functions get per-function timeline columns (instances, rps);
// larger ones (long-tail fleets) keep the cluster columns only.
inline constexpr size_t kTimelineFunctionColumns = 100;

// One row of the per-interval timeline (CSV with --out).
struct TimelineRow {
  double t_s = 0;
  int active_gpus = 0;
  double allocated_share = 0;  // sum over GPUs of min(1, sum of SM request x time quota)
  double cost_usd = 0;         // cost of the GPU time held so far (cumulative, all functions)
  double sm_fragmentation = 0;
  double mem_fragmentation = 0;
  std::vector<int> instances;  // per function, in SimConfig order (empty: > 100 functions)
  std::vector<double> rps;     // per function (empty: > 100 functions)
};

// Per stage of a pipeline, over the run.
struct StageResult {
  std::string function;            // the stage function's name
  double mean_queue_length = 0;    // time-averaged requests waiting at the stage
  double arrival_cv = 0;           // CV of inter-arrival times at the stage
  double utilisation = 0;          // busy replica-time / deployed replica-time, in [0, 1]
  double mean_replicas = 0;        // time-averaged deployed GPU replicas
  double mean_cpu_workers = 0;     // time-averaged CPU workers
  double mean_sojourn_ms = 0;      // arrival at the stage -> completion there
  double mean_transfer_ms = 0;     // activation transfer into this stage (0 for stage 0)
  int64_t cold_starts = 0;
  bool key_stage_ever = false;     // the pipeline policy marked it key at least once
};

struct PipelineResult {
  std::string name;
  int64_t requests = 0, completed = 0, dropped = 0;
  double mean_ms = 0, p50_ms = 0, p75_ms = 0, p95_ms = 0, p99_ms = 0;  // end to end
  double svr = 0;                  // fraction over PipelineConfig::slo (dropped count)
  double goodput_rps = 0;          // completions within slo per second of the run
  std::vector<double> sweep_goodput_rps;  // per slo_multipliers entry
  std::vector<double> sweep_slo_satisfaction;  // fraction within slo_base x multiplier
  double held_gpu_seconds = 0;     // summed over the stages
  std::vector<StageResult> stages;
};

struct RunResult {
  std::string policy;
  std::string workload;
  double gpu_seconds = 0;      // integral of allocated share (GPU-seconds)
  // Sums over the functions of FunctionResult's fields of the same names; cost per 1K requests
  // divides by every inference function's requests (0 without requests).
  double held_gpu_seconds = 0;
  double cost_usd = 0;
  double cost_per_1k_requests_usd = 0;
  int peak_active_gpus = 0;
  double mean_active_gpus = 0;  // a GPU is active while any instance (parked too) resides on it
  // Issue 13: sums over the inference functions of the fields of the same names; the ms per
  // request divides by all their requests.
  double idle_memory_gib_s = 0;
  double cold_start_wait_s = 0;
  double cold_start_ms_per_request = 0;
  double sm_fragmentation = 0;   // time-averaged, cluster-wide
  double mem_fragmentation = 0;
  double fgd_fragmentation = 0;  // FGD's measure, time-averaged
  int64_t events = 0;
  std::vector<FunctionResult> functions;
  std::vector<PipelineResult> pipelines;  // one per SimConfig::pipelines entry, same order
  std::vector<TimelineRow> timeline;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_SIM_CONFIG_H_
