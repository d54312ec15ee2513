// AgentDaemon::Impl: the daemon's parts and the agent API's handlers (agent_api.cc); startup and
// shutdown live in agent_daemon.cc. Internal to sluice_runtime_agentd.
// Thread safety: handlers run on the http::EventLoop; `mu` guards port allocation and `gpus_mu`
// the instances' GPU lists; the supervisor and token servers lock themselves.
#ifndef SLUICE_RUNTIME_AGENT_AGENT_API_H_
#define SLUICE_RUNTIME_AGENT_AGENT_API_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "runtime/agent/agent_daemon.h"
#include "runtime/agent/agent_params.h"
#include "runtime/agent/http_probe.h"
#include "runtime/agent/instance_record.h"
#include "runtime/agent/instance_supervisor.h"
#include "runtime/agent/node_join.h"
#include "runtime/agent/process_pool.h"
#include "runtime/agent/registration_server.h"
#include "runtime/agent/token_server.h"
#include "runtime/common/loop_env.h"
#include "runtime/http/http.h"
#include "runtime/metrics/registry.h"

namespace sluice::runtime {

struct AgentDaemon::Impl {
  AgentOptions options;
  std::string device;  // "emulated" or "cuda"
  std::string intercept_lib, emulated_dir, spin_path, bin_dir;
  std::vector<AgentGpu> gpus;
  std::unique_ptr<LoopEnv> token_loop;
  std::vector<std::unique_ptr<TokenServer>> token_servers;  // parallel to gpus
  std::unique_ptr<RegistrationServer> registration;
  std::unique_ptr<http::EventLoop> loop;
  std::unique_ptr<http::Client> client;
  std::unique_ptr<HttpProbe> probe;
  std::unique_ptr<InstanceSupervisor> supervisor;
  std::unique_ptr<http::Server> server;
  std::unique_ptr<AgentParams> params;  // null when params_capacity_bytes is 0
  std::unique_ptr<NodeJoin> join;       // null without options.join (node_join.h)
  std::unique_ptr<ProcessPool> pool;    // null when pool_per_gpu is 0
  Registry metrics;
  struct Gauges {  // families of `metrics`, created by Start
    Family<Gauge>* sm_share = nullptr;        // {function, instance}
    Family<Gauge>* time_quota = nullptr;      // {function, instance}
    Family<Gauge>* effective_share = nullptr; // {function, instance}
    Family<Gauge>* blocks = nullptr;          // {function, instance}
    Family<Gauge>* mem_used = nullptr;        // {function, instance}
    Family<Gauge>* restarts = nullptr;        // {function, instance}
    Family<Gauge>* instances = nullptr;       // {state}
    Family<Gauge>* tokens = nullptr;          // {gpu}
    Family<Gauge>* share_state = nullptr;     // {gpu, state}: 1 for the current state
    Family<Gauge>* parked = nullptr;          // {function, instance}
    Family<Gauge>* ready_seconds = nullptr;   // {function, instance}
    Family<Gauge>* pool = nullptr;            // {what}: idle, claims, misses, spawned, died
  } gauges;
  bool stopped = false;
  absl::Mutex mu;
  int next_port ABSL_GUARDED_BY(mu) = 0;
  // Every GPU of each instance started here, in order (first = its InstanceStatus::gpu_uuid).
  mutable absl::Mutex gpus_mu;
  absl::flat_hash_map<int64_t, std::vector<std::string>> instance_gpus ABSL_GUARDED_BY(gpus_mu);
  // How each instance's latest start went (the start record of docs/platform.md "Cold starts").
  struct StartInfo {
    std::string path = "spawn";   // "pool": a pre-started process was handed the instance
    double handoff_ms = 0;        // the pool claim (connect + assignment written)
    std::string params = "none";  // "host-cache" | "disk" (loaded to the store meanwhile)
    std::string params_model;     // the store's name for the model file
  };
  absl::flat_hash_map<int64_t, StartInfo> starts ABSL_GUARDED_BY(gpus_mu);

  std::string socket_path() const { return options.run_dir + "/token.sock"; }
  // Re-adoption after an agent restart (agent_adopt.cc): the instance records and the emulated
  // GPUs' identities kept in run_dir.
  std::string records_path() const { return options.run_dir + "/instances.json"; }
  std::string emulated_gpus_path() const { return options.run_dir + "/emulated-gpus.json"; }
  // Takes over every instance of `records` (read from records_path() before the supervisor's
  // first tick rewrites it) whose process still runs (same start time) with its
  // GPUs on this node: token-server specs set again, InstanceSupervisor::Adopt. A recorded
  // process this agent cannot gate (its GPU is gone) is stopped. Logs what it did.
  void AdoptInstances(const absl::StatusOr<std::vector<InstanceRecord>>& records);
  // Emulated GPUs keep their identity across agent restarts: the uuids recorded in
  // emulated_gpus_path() replace the fresh ones when the count matches (so recorded instances
  // and their device segments still belong to this node), then the current ones are recorded.
  void KeepEmulatedGpus();
  http::Router MakeRouter();
  void Shutdown();

  // Handlers (agent_api.cc).
  http::Response Node();
  http::Response StartInstanceHandler(const http::Request& req);
  http::Response Quota(const http::Request& req);
  http::Response Delete(const http::Request& req);
  http::Response Metrics();
  http::Response Park(const http::Request& req);  // PUT /agent/v1/instances/{id}/park

  // The fast cold-start path (agent_start.cc).
  void StartPool();  // pool_per_gpu > 0: the ProcessPool, parking each pooled process
  // Host-cache parameters for `s` (AgentOptions::host_cache_models): SLUICE_PARAMS_* added to
  // `env` when the store holds its model file, else a background load into the store.
  void HostCacheParams(const StartInstance& s, EnvList& env, StartInfo& info);
  // Hands `launch` to a ready pooled process of its runtime on GPU `gi` (launch.adopt_pid set,
  // the pid bound to instance `id` on the token server) and keeps the runtime warm on every
  // GPU. No-op for multi-GPU or non-inference instances.
  void StartFromPool(int64_t id, const StartInstance& s, const std::vector<int>& gis,
                     InstanceLaunch& launch, StartInfo& info);
  StartInfo StartInfoOf(int64_t id) const;

  // Helpers (agent_status.cc unless noted).
  absl::Status CreateMetrics();
  // Sums the token-server slots of instance `s`: {tokens issued for the period (its budget,
  // after the time quota), blocks_last_period, mem_used_bytes, share tokens (the controller's
  // grant at the SM share, before the time quota)}.
  std::array<int64_t, 4> SlotTotals(const InstanceStatus& s) const;
  int GpuIndex(const std::string& uuid) const;  // -1 when unknown
  double TokensPerPeriod(const InstanceStatus& s) const;  // of its first GPU; 0 when unknown
  int LeastLoadedGpu() const;
  // Indices into `gpus` of `s`'s GPUs in order: `gpus` when given, else `gpu`, else the
  // least-loaded GPU. InvalidArgument naming "gpu" or "gpus[i]" for a uuid not on this node.
  absl::StatusOr<std::vector<int>> ResolveGpus(const StartInstance& s) const;
  // Sets `spec` for instance `id` on the token server of every GPU in `gis`.
  absl::Status SetSpecOnGpus(int64_t id, const std::vector<int>& gis, const InstanceSpec& spec);
  // Instance `s`'s GPU uuids in order ({s.gpu_uuid} when not recorded).
  std::vector<std::string> GpusOf(const InstanceStatus& s) const;
  absl::StatusOr<int> AllocatePort();
  nlohmann::json InstanceJson(const InstanceStatus& s) const;
  nlohmann::json GpuJson(const AgentGpu& g) const;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_AGENT_API_H_
