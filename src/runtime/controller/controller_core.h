// ControllerCore: the controller daemon's state and logic on its event loop - registry, profiling
// orchestration, placement over one ClusterState (the controller's DiluScheduler for default
// `dilu` functions, else the function's core::PolicySet), a scaler per inference function (a
// LazyScaler, the set's HorizontalScaler, or its HybridScaler), node polling and the routes the
// gateway reads. Created by ControllerDaemon; the HTTP
// handlers (controller_http.cc) call it. Thread safety: every method runs on the loop thread
// except Init (before the loop has work) and StopWorkers (from the stopping thread).
#ifndef SLUICE_RUNTIME_CONTROLLER_CONTROLLER_CORE_H_
#define SLUICE_RUNTIME_CONTROLLER_CONTROLLER_CORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

#include "core/dilu/lazy_scaler.h"
#include "core/dilu/scheduler.h"
#include "core/policy/hybrid.h"
#include "core/policy/pipeline.h"
#include "core/registry/policy_registry.h"
#include "core/resource/cluster.h"
#include "core/serving/scale_out.h"
#include "nlohmann/json.hpp"
#include "runtime/cluster/leader_election.h"
#include "runtime/cluster/prefix_mirror.h"
#include "runtime/controller/agent_api.h"
#include "runtime/controller/controller_daemon.h"
#include "runtime/controller/dashboard_http.h"
#include "runtime/controller/function_record.h"
#include "runtime/controller/llm_pools.h"
#include "runtime/controller/load_merge.h"
#include "runtime/http/http.h"
#include "runtime/metrics/registry.h"
#include "runtime/store/store.h"

namespace sluice::runtime {

// One instance the controller placed (or adopted). `state` is the agent's state name.
struct ControllerInstance {
  int64_t id = 0;
  std::string function;
  int agent = 0;
  std::vector<common::GpuId> gpus;  // held in the ClusterState while `allocated`
  std::string gpu_uuid;
  std::string url;  // "host:port" once the agent reports the port
  std::string state = "starting";
  int restarts = 0;
  double request = 0;
  double limit = 0;
  double time_quota = 1;  // HAS-GPU's q (1: no time slicing)
  int batch = 1;          // the max_batch it was started with
  double sm_share = 0;
  int64_t mem_used_bytes = 0;
  int in_flight = 0;
  // Memory-only idle (controller_park.cc): parked as the agent last reported it (or as last
  // sent to it), and since when it has had nothing in flight (InfinitePast: not seen ready yet).
  bool parked = false;
  absl::Time idle_since = absl::InfinitePast();
  bool confirmed = false;  // the agent accepted or listed it (absence then means gone)
  // When the controller learnt that the agent holds it (the 201, or the send time of the poll
  // that listed it, whichever came first; InfiniteFuture: not yet): only a node report polled
  // after this can say it is gone (ApplyNode).
  absl::Time confirmed_at = absl::InfiniteFuture();
  bool removing = false;   // dropped from the routes; DELETE sent or pending
  bool profiling = false;  // the profiling instance of its function, never routed
  bool allocated = false;
  // Disaggregated LLM functions (controller_llm.cc): "prefill" or "decode" ("" otherwise, or
  // while an adopted instance's role is not known yet); `mutate_to` is the role it is being
  // switched to (out of the routes meanwhile), "" when not switching.
  std::string role;
  std::string mutate_to;
  // Started to replace instances lost with their node (controller_cluster.cc): when, so the
  // cold start it costs is reported once it is ready; InfinitePast otherwise.
  absl::Time replacing_since = absl::InfinitePast();
};

struct ControllerFunction {
  FunctionRecord record;
  int64_t store_version = 0;
  common::FunctionId id;
  // The spec's policy set (core::MakePolicySet). Null for `dilu` without policy_params, which
  // runs on the controller's own DiluScheduler and LazyScaler (ControllerOptions.scheduler and
  // .lazy), exactly as before policies were selectable.
  std::unique_ptr<core::PolicySet> policy;
  // From the profile's trial points (null without them); declared before the scalers, which
  // borrow it through FunctionTraits::latency, so it outlives them.
  std::unique_ptr<core::LatencyModel> latency;
  // Ready inference/LLM functions have at most one of these: `hybrid` when the set makes one
  // (driven instead of scaler + placement), else `scaler`.
  std::unique_ptr<core::HorizontalScaler> scaler;
  std::unique_ptr<core::HybridScaler> hybrid;
  int desired = 0;
  bool unschedulable = false;  // the last placement found no room
  // Disaggregated LLM functions only (instead of `scaler`/`hybrid`): the P/D pools.
  std::unique_ptr<LlmPools> llm;
  bool key_stage = false;      // a pipeline stage its PipelineScaler marked key (placement hint)
};

// A pipeline's scaler (controller_pipeline.cc): made once every stage function is ready, from
// the stage-0 function's policy set; null when the set makes none (stages scale on their own).
struct ControllerPipeline {
  std::vector<common::FunctionId> stage_ids;  // the stage functions it was made for
  std::unique_ptr<core::PipelineScaler> scaler;
};

struct ControllerAgent {
  http::Endpoint endpoint;
  std::string node;
  std::vector<ReportedGpu> gpus;
  std::vector<common::GpuId> gpu_ids;  // parallel to gpus; empty while lost
  bool poll_in_flight = false;
  // The ready models of its host-memory parameter store (GET /agent/v1/params, polled while a
  // pipeline is deployed; controller_pipeline.cc); empty when unknown or the store is disabled.
  std::set<std::string> cached_models;
  bool params_poll_in_flight = false;
  // Discovered nodes (ControllerOptions::discover_nodes): the store key's id, and whether its
  // key went away (its instances were re-placed; it rejoins under the same index).
  std::string key;
  bool lost = false;
};

// The uuids of those of `ids` that are GPUs of `a`, in the order of `ids`.
std::vector<std::string> GpuUuidsOn(const ControllerAgent& a,
                                    const std::vector<common::GpuId>& ids);

class ControllerCore {
 public:
  ControllerCore(const ControllerOptions& options, http::EventLoop& loop, Store& store);
  ~ControllerCore();

  // Blocking start-up (see ControllerDaemon::Start): agents, cluster, registry, adoption.
  [[nodiscard]] absl::Status Init();
  // Starts the node poll timer. On the loop thread.
  void StartPolling();
  // Cancels profiling and joins the worker threads. From the stopping thread.
  void StopWorkers();

  http::Router MakeRouter();  // controller_http.cc

  // controller_cluster.cc (issue 12). Starts the election / node-watch timer when the options
  // ask for either; on the loop thread. Without `elect` the daemon has run Init already.
  // `port`: the admin API's bound port (the default id and address).
  void StartCluster(int port);
  // True when this controller acts (always without `elect`; else while leading and started).
  // Thread-safe.
  bool Acting() const { return !options_.elect || acting_.load(); }
  // GET /admin/v1/nodes and GET /admin/v1/leader; the 503 a follower answers.
  http::Response Nodes() const;
  http::Response Leader() const;
  http::Response NotLeader() const;
  // Test hook (ControllerDaemon::StopAsIfCrashed): forget the leader lease without resigning.
  void AbandonLeadership() {
    if (election_)
      election_->Abandon();
  }

  // Admin API (answers as documented in docs/platform.md).
  http::Response Deploy(const std::string& yaml);
  http::Response List() const;
  http::Response Describe(const std::string& name) const;
  void Delete(const std::string& name, http::Responder respond);
  http::Response Scale(const std::string& name, const std::string& body);
  http::Response Cluster() const;
  // Internal API.
  http::Response Routes() const;
  http::Response Load(const std::string& body);
  http::Response Wake(const std::string& body);
  std::string RenderMetrics();
  // POST /admin/v1/functions/{name}/mutate {"instance", "role"}: switches one instance of a
  // disaggregated LLM function; answers once the instance has switched (controller_llm.cc).
  void MutateApi(const std::string& name, const std::string& body, http::Responder respond);

 private:
  // controller.cc: registry.
  nlohmann::json StatusJson(const ControllerFunction& f) const;
  nlohmann::json InstanceJson(const ControllerInstance& i) const;
  [[nodiscard]] absl::Status Persist(ControllerFunction& f);
  void SetReady(ControllerFunction& f, const ProfileInfo& profile);
  void SetFailed(ControllerFunction& f, const std::string& message);
  void MakeScaler(ControllerFunction& f);
  // Builds f.policy from the spec (null for plain dilu) and replays the cluster into its
  // placement policy's indices. Fails only if the registry changed since the spec was accepted.
  [[nodiscard]] absl::Status MakePolicy(ControllerFunction& f);
  core::FunctionTraits Traits(const ControllerFunction& f) const;
  [[nodiscard]] absl::Status LoadRegistry();

  // controller_instances.cc: placement, scaling, node status.
  absl::StatusOr<std::vector<NodeReport>> FetchAgentsBlocking();
  void AdoptInstances(const std::vector<NodeReport>& nodes);
  void AdoptOne(int agent, const ReportedInstance& ai, ControllerFunction& f);
  void ResumeFunctions();  // after adoption: finish deletes, re-profile, scalers, reconcile
  std::vector<const ControllerInstance*> Active(const std::string& function) const;
  // After a wake: polls the agents every few ms until `name` has a ready instance or
  // `deadline` (docs/platform.md "Cold starts").
  void PollUntilReady(const std::string& name, absl::Time deadline);
  // Memory-only idle (controller_park.cc): parks and unparks the ready instances of `name` as
  // core::PickParking decides for scaler.ActiveWanted(now) (starting ones count as active).
  void DriveParking(const std::string& name, const core::HorizontalScaler& scaler,
                    absl::Time now);
  void Reconcile(ControllerFunction& f, bool cold_start);
  // `role`: a P/D pool's instance ("" for everything else).
  bool StartServing(ControllerFunction& f, bool restart, const std::string& role = "");
  absl::StatusOr<std::vector<common::GpuId>> Allocate(ControllerFunction& f, int64_t id,
                                                      core::SmQuota quota, bool profiling);
  // Starts instance `id` of `f` on `gpus` (already committed) through their agent.
  void Launch(ControllerFunction& f, int64_t id, const std::vector<common::GpuId>& gpus,
              core::SmQuota quota, int batch, bool restart, const std::string& role = "");
  void Release(ControllerInstance& i);
  // Tells every placement policy in use (the DiluScheduler and each function's set) about a
  // committed change, so each keeps its indices over the shared cluster.
  void NotifyAdded(const core::Allocation& a);
  void NotifyRemoved(const core::Allocation& a);
  // A quota changed in place (`cluster_` holds `after`): placement policies' OnRequota.
  void NotifyRequota(const core::Allocation& before, const core::Allocation& after);
  core::SmQuota ServingQuota(const ControllerFunction& f) const;

  // controller_hybrid.cc: the HybridScaler path.
  void DriveHybrid(ControllerFunction& f, const core::LoadSample& sample, absl::Time now);
  std::vector<core::PodView> Pods(const ControllerFunction& f) const;
  bool ApplySetQuota(ControllerFunction& f, const core::ScalingAction& a);
  bool ApplyAdd(ControllerFunction& f, const core::ScalingAction& a);
  bool ApplyRemove(ControllerFunction& f, const core::ScalingAction& a);
  // Requests/s one instance serves: the profile's capacity, or, when the instance's quota or
  // batch differs from the profile and a latency model exists, batch / t(batch, s, q).
  double CapacityOf(const ControllerFunction& f, const ControllerInstance& i) const;
  void ScaleIn(int64_t id);
  void SendDelete(int64_t id, absl::Duration drain);
  void PollNodes();
  // `node` answers a poll sent at `polled_at`: an instance confirmed at or after that time may
  // be missing from it only because the agent answered before it took the start.
  void ApplyNode(int agent, const NodeReport& node, absl::Time polled_at);
  void Erase(int64_t id);
  void Forget(int agent, int64_t id);  // DELETE of an instance the agent lists as stopped/failed
  int64_t NextInstanceId();
  void Touch();  // bumps the routes version when the routed set/state changed
  std::string RouteKey() const;
  nlohmann::json RouteJson(const ControllerFunction& f) const;

  // controller_llm.cc: P/D pools of disaggregated LLM functions (llm_pools.h).
  using MutateDone = absl::AnyInvocable<void(http::Response)>;
  void MakeLlmPools(ControllerFunction& f);  // keeps desired sizes and stats of a previous one
  void ReconcileLlm(ControllerFunction& f);  // starts / drains per pool towards the desired
  void TickLlm();                             // every options.llm.poll: stats, autoscaler
  void PollLlmStats(ControllerFunction& f);
  void OnLlmStats(const std::string& function, int64_t id, absl::StatusOr<http::Response> r);
  void DriveLlm(ControllerFunction& f, absl::Time now);
  std::vector<LlmInstanceView> LlmViews(const ControllerFunction& f) const;
  // Switches instance `id` to `role`: out of the routes, drain_grace, POST /sluice/v1/role,
  // back in the routes with the new role (the old one on failure); `done` (may be null) gets
  // the operator's answer.
  void Mutate(int64_t id, const std::string& role, MutateDone done);
  void FinishMutate(int64_t id, const std::string& role, absl::StatusOr<http::Response> r,
                    MutateDone done);
  nlohmann::json LlmStatusJson(const ControllerFunction& f) const;

  // controller_pipeline.cc: pipelines (issue 11) - a pipeline spec is deployed as its stage
  // functions (spec/ExpandPipeline); the pipeline's name answers describe and delete for all.
  // DeployPipeline: nullopt when `spec` is neither a pipeline nor named like one.
  std::optional<http::Response> DeployPipeline(const FunctionSpec& spec);
  std::optional<http::Response> DescribePipeline(const std::string& name) const;
  // True (and `respond` consumed) when `name` is a pipeline.
  bool DeletePipeline(const std::string& name, http::Responder& respond);
  std::vector<const ControllerFunction*> PipelineStages(const std::string& name) const;
  void AddStageFields(const ControllerFunction& f, nlohmann::json& route) const;
  // Drives the pipelines' scalers from one load report; returns the stage functions they scale
  // (Load skips their own scalers).
  std::set<std::string> DrivePipelines(const nlohmann::json& entries, absl::Time now);
  core::PipelineScaler* PipelineScalerFor(const std::string& pipeline);
  // Applies `d` to the stages; `samples` (as observed) give the queues that order scale-outs.
  void ApplyPipelineDecision(const std::string& pipeline, const core::PipelineDecision& d,
                             const std::vector<core::PipelineStageSample>& samples);
  void GrantStageScaleOuts(const std::vector<ControllerFunction*>& stages,
                           std::vector<core::ScaleOutNeed> needs);
  // Parameter-store contents for cache-aware placement (controller_pipeline.cc): PollParams asks
  // agent `a` for GET /agent/v1/params when a pipeline is deployed; CachedOn is the nodes whose
  // store holds `spec`'s parameters ready (its ParamsKey), for InstanceDemand::cached_on.
  void PollParams(size_t a);
  std::vector<core::NodeId> CachedOn(const FunctionSpec& spec) const;

  // controller_cluster.cc: leadership, nodes joining and leaving, the cluster rebuilt.
  void ClusterTick();
  void BecomeLeader();
  void ResetForInit();  // forgets agents, functions and instances before a (re-)Init
  void SyncNodes();        // the leader: node joins and losses from the mirror's changes
  void SyncNodesMirror();  // the mirror only (start-up, followers)
  // (store key id, agent address) of every registered node.
  std::vector<std::pair<std::string, std::string>> DiscoveredNodes() const;
  void JoinNode(const std::string& key, const std::string& address);
  int AddAgent(const http::Endpoint& ep, const std::string& key, const NodeReport& node);
  void LoseNode(int agent);
  // Renumbers the live agents' GPUs, rebuilds cluster_ (allocations re-committed), the
  // DiluScheduler and every function's policy set (and their scalers, which may borrow them).
  [[nodiscard]] absl::Status RebuildCluster();
  void ReportReplacement(ControllerInstance& i);

  // dashboard_sample.cc: the live dashboard's sample of this state (one per second).
  DashSample DashboardSample(absl::Time now) const;
  void SampleDashboard();

  // controller_profiling.cc.
  void StartProfiling(ControllerFunction& f);
  void OnProfiled(const std::string& name, int64_t instance, absl::StatusOr<ProfileInfo> result);

  const ControllerOptions options_;
  http::EventLoop& loop_;
  Store& store_;
  http::Client client_;
  std::vector<ControllerAgent> agents_;
  std::unique_ptr<core::ClusterState> cluster_;
  std::unique_ptr<core::DiluScheduler> scheduler_;
  std::map<std::string, ControllerFunction> functions_;
  std::map<int64_t, ControllerInstance> instances_;
  std::map<std::string, ControllerPipeline> pipelines_;  // by pipeline name
  LoadMerger load_merger_;  // several gateways' load reports (load_merge.h)
  std::vector<int> gpu_agent_;  // GpuId -> agent index
  int64_t next_instance_id_ = 1;
  int64_t next_function_id_ = 0;
  int64_t routes_version_ = 1;
  std::string routes_key_;

  Registry metrics_;
  Family<Counter>* cold_starts_metric_ = nullptr;
  Family<Counter>* trials_metric_ = nullptr;
  Family<Gauge>* instances_metric_ = nullptr;
  Family<Gauge>* functions_metric_ = nullptr;
  Family<Gauge>* version_metric_ = nullptr;
  Family<Gauge>* active_gpus_metric_ = nullptr;  // GPUs holding at least one instance
  std::map<std::vector<std::string>, bool> instance_series_;  // label sets set so far
  std::unique_ptr<Dashboard> dashboard_ = std::make_unique<Dashboard>();  // /dashboard

  // controller_cluster.cc state.
  std::unique_ptr<LeaderElection> election_;
  std::unique_ptr<PrefixMirror> nodes_mirror_;
  LeaderRecord self_;
  // Node keys whose agent has not answered yet (true while a GET /agent/v1/node is out).
  std::map<std::string, bool> joining_;
  std::atomic<bool> acting_{false};  // Init done under leadership
  bool deposed_ = false;           // lost the lease after leading: answers 503 until restarted
  absl::Time elected_at_ = absl::InfinitePast();
  Family<Counter>* replaced_metric_ = nullptr;
  Family<Gauge>* replacement_seconds_metric_ = nullptr;

  std::atomic<bool> stopping_{false};
  absl::Mutex workers_mu_;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(workers_mu_);
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_CONTROLLER_CORE_H_
