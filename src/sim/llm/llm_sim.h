// The token-level LLM serving simulator (issue 10): continuous batching with prefill and decode
// iterations, KV-cache admission and preemption per instance, tensor parallelism, colocated or
// prefill/decode-disaggregated pools with KV transfers as network flows, and scale-out mechanisms
// (SSD / host cache / network multicast chains executed layer by layer on core::net::FlowNetwork,
// live zigzag scale-out, prefill->decode mutation) driven by core::llm::LlmAutoscaler, in virtual
// time (common::SimEnv). LlmSimConfig is what `kind: llm_serving` experiments load
// (src/sim/llm_experiment); LlmRunResult is what a run reports. Value types; not thread-safe.
//
// CONTRACT (lead, issue 10): the engine (src/sim/llm) and the experiment loader / report
// (src/sim/llm_experiment) meet here. Extend, do not change.
#ifndef SLUICE_SIM_LLM_LLM_SIM_H_
#define SLUICE_SIM_LLM_LLM_SIM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/llm/llm_policies.h"
#include "core/net/topology.h"
#include "core/perf/llm_perf_model.h"
#include "sim/workload/workload_spec.h"

namespace sluice::sim::llm {

// One LLM function (a model served as a MaaS endpoint).
struct LlmFunctionConfig {
  std::string name;
  std::string model;          // core::BuiltinLlmModel name
  int tp = 0;                 // 0 = the model's default
  bool disaggregated = true;  // P/D pools (BlitzScale's setup); false = colocated instances
  absl::Duration ttft_slo = absl::Milliseconds(450);
  absl::Duration tbt_slo = absl::Milliseconds(150);
  int initial_prefill = 1;    // warm at t = 0 (colocated: initial_prefill instances)
  int initial_decode = 1;
  int max_batch_tokens = 4096;  // prefill tokens per iteration (chunk budget)
  int max_decode_batch = 256;   // sequences per decode iteration
  WorkloadSpec workload;        // request_trace with prompt/output token columns, or synthetic
  int default_prompt_tokens = 1024;  // for arrivals without token counts
  int default_output_tokens = 64;
};

// A burst superimposed on a function's workload: the rate multiplied by `factor` within `ramp`
// (BlitzScale's "5x within 2 s"), held for `hold`.
struct BurstConfig {
  std::string function;
  absl::Duration at = absl::ZeroDuration();
  double factor = 5.0;
  absl::Duration ramp = absl::Seconds(2);
  absl::Duration hold = absl::Seconds(30);
};

// A GPU, or a whole node, dies at `at` (issue 10: a broken chain member mid-transfer). The
// instance holding the GPU dies with it: its sequences are re-queued for recompute and counted,
// a parameter load it was receiving or forwarding is routed around it, and loads it was the
// source of continue from the remaining sources. A node failure also loses its host cache.
// The GPU(s) never come back.
struct FailureConfig {
  absl::Duration at = absl::ZeroDuration();
  int node = 0;
  int gpu = -1;  // -1: every GPU of the node and its host cache
};

struct LlmPolicyConfig {
  std::string label;              // shown in output; defaults to set.name
  core::llm::LlmPolicySet set;    // from core::llm::MakeLlmPolicySet
};

struct LlmSimConfig {
  std::string name;
  std::string gpu = "a100";                 // perf-model GPU
  core::net::ClusterNetSpec cluster;        // from a preset and overrides
  std::vector<LlmFunctionConfig> functions;
  std::vector<BurstConfig> bursts;
  std::vector<FailureConfig> failures;      // applied in every run
  std::vector<LlmPolicyConfig> policies;    // runs = policies, in order
  absl::Duration duration = absl::Minutes(10);
  absl::Duration drain_timeout = absl::Minutes(2);
  absl::Duration sample_interval = absl::Milliseconds(100);  // autoscaler and timeline period
  absl::Duration instance_start = absl::Milliseconds(200);   // process start before loading
  uint64_t seed = 1;
  // Network multicast: a scale-out round of a model that starts while an earlier round still
  // loads joins it (its new members chain after the earlier round's loading members and the
  // sources not already sending) instead of planning from the same sources again. false: each
  // round is planned on its own (the engine before issue 10's remainders; for comparison).
  bool merge_scale_rounds = true;
  std::string source_file;                  // for errors
};

struct LlmFunctionResult {
  std::string name;
  int64_t requests = 0, completed = 0, rejected = 0;  // rejected: prompt longer than KV capacity
  double ttft_p50_ms = 0, ttft_p99_ms = 0, ttft_mean_ms = 0;
  double tbt_p50_ms = 0, tbt_p99_ms = 0, tbt_mean_ms = 0;
  double slo_attainment = 0;  // fraction of completed requests meeting both TTFT and TBT SLOs
  int64_t scale_outs = 0, scale_ins = 0, mutations = 0, live_scales = 0, preemptions = 0;
  double mean_load_s = 0;     // mean parameter-load time of scale-outs
  // Failures: instances that died, and sequences re-queued from them (recompute; each counted
  // once per re-queue).
  int64_t instance_failures = 0, requeued = 0;
};

// One sample of the timeline (every sample_interval): §6.3's throughput timeline and Fig. 16's
// host-cache usage.
struct LlmTimelinePoint {
  double t_s = 0;
  double prefill_tokens_per_s = 0;  // prefill throughput over the last interval
  double decode_tokens_per_s = 0;
  int prefill_instances = 0, decode_instances = 0, loading_instances = 0;
  double gpus_busy = 0;             // GPUs held by instances (serving or loading)
  double host_cache_gib = 0;        // total host memory used for parameter caching
  double network_gbps = 0;          // total NIC traffic
};

struct LlmRunResult {
  std::string policy;               // label
  std::vector<LlmFunctionResult> functions;
  double gpu_seconds = 0;           // GPU time held by instances (serving + loading)
  double mean_gpus = 0, peak_gpus = 0;
  double host_cache_gib_mean = 0, host_cache_gib_peak = 0;
  int64_t events = 0;
  // Host wall time of the run: 0 from the simulator (it reads no clock); `sluice sim run` fills
  // it (src/sim/cli/llm_command.cc). Reporting only, never compared.
  double wall_s = 0;
  std::vector<LlmTimelinePoint> timeline;
};

// Runs every policy of `config`, in order. Errors name the function / field (config file given in
// config.source_file). Deterministic for a given seed.
absl::StatusOr<std::vector<LlmRunResult>> RunLlmExperiment(const LlmSimConfig& config);
// One run under one policy.
absl::StatusOr<LlmRunResult> RunLlmSimulation(const LlmSimConfig& config,
                                              const LlmPolicyConfig& policy);

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_LLM_SIM_H_
