// LlmEngine: one run of the token-level LLM serving simulator (src/sim/llm) under one policy set,
// on common::SimEnv. Arrivals -> per-function router -> instances (Batcher: continuous batching,
// KV) -> P/D KV transfers as FlowNetwork flows; every sample_interval the autoscaler's decision
// places, loads (core::blitz::LayeredMulticast: SSD, host cache or network multicast, layer by
// layer; a round joins one still loading), mutates or drains instances; injected failures kill
// instances (requests re-queued, loads routed around them). RunLlmSimulation (llm_sim.h) builds one with the built-in
// perf models and core::llm's autoscaler; tests inject fakes (EngineDeps). Not thread-safe.
#ifndef SLUICE_SIM_LLM_ENGINE_H_
#define SLUICE_SIM_LLM_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "common/sim_env.h"
#include "core/blitz/layered_multicast.h"
#include "core/blitz/parameter_pool.h"
#include "core/llm/llm_autoscaler.h"
#include "core/llm/zigzag.h"
#include "core/net/flow_network.h"
#include "core/net/topology.h"
#include "sim/llm/batcher.h"
#include "sim/llm/llm_sim.h"
#include "sim/workload/arrivals.h"

namespace sluice::sim::llm {

// The autoscaler as the engine sees it (core::llm::LlmAutoscaler in production, scripts in tests).
class ScaleDecider {
 public:
  virtual ~ScaleDecider() = default;
  virtual void Observe(const core::llm::LlmLoad& load) = 0;
  virtual core::llm::LlmScaleDecision Decide(absl::Time now) = 0;
};

struct EngineDeps {
  std::vector<const core::LlmPerfModel*> models;  // per function (borrowed), same order
  // Per function; null (or a null result) = that function does not autoscale.
  std::function<std::unique_ptr<ScaleDecider>(int fn, const core::llm::LlmScalerConfig&)>
      make_scaler;
  // Tests: the arrivals of function fn (null = from the function's WorkloadSpec).
  std::function<std::unique_ptr<ArrivalSource>(int fn)> make_source;
  // Live scale-out plan (PlanZigzag / PlanBestEffort by the policy's LiveMode); null = no live.
  std::function<absl::StatusOr<core::llm::ZigzagPlan>(const core::llm::ZigzagInput&)> plan_live;
};

// Instance lifecycle:
//   kStarting (GPUs held, process starting for instance_start) -> kLoading (parameters arriving
//   layer by layer) -> kServing -> kDraining (no new work; running sequences finish) -> kGone
//   Initial instances start in kServing. kLoading instances in a live pair serve through the
//   pair before kServing.
//   any state but kGone -> kFailed (a GPU of it died, LlmSimConfig::failures): its sequences go
//   back to the router for recompute, its load hop is routed around, its live GPUs are freed.
enum class InstState { kStarting, kLoading, kServing, kDraining, kGone, kFailed };

class LlmEngine {
 public:
  static absl::StatusOr<std::unique_ptr<LlmEngine>> Create(const LlmSimConfig& config,
                                                           const LlmPolicyConfig& policy,
                                                           EngineDeps deps);
  ~LlmEngine();
  // Runs to the end (duration + drain) and returns the result. Call once.
  absl::StatusOr<LlmRunResult> Run();

  // Test access.
  const core::net::FlowNetwork& net() const { return *net_; }
  int64_t max_kv_overflow() const { return max_kv_overflow_; }

 private:
  struct Instance {
    int id = 0, fn = 0, node = 0;
    BatchRole role = BatchRole::kColocated;
    InstState state = InstState::kStarting;
    std::vector<int> gpus;
    std::unique_ptr<Batcher> batcher;
    common::Env::TimerId iter_timer = 0;
    absl::Time placed_at, load_start;
    int load = -1, hop = -1;  // its parameter load (loads_ index) and hop there
    int pair = -1;            // live scale-out partner (source <-> target)
    bool live_target = false;
    int incoming = 0;              // decode: KV transfers in flight to it
    int live_loaded = -1;          // source: target layers when live_x was planned
    std::vector<int> live_x;       // source: planned target layers per coming batch
    size_t live_next = 0;
  };
  struct Function {
    LlmFunctionConfig config;
    const core::LlmPerfModel* model = nullptr;
    int tp = 1;
    int64_t kv_capacity = 0;
    FunctionStats stats;
    std::unique_ptr<ArrivalSource> source;
    std::unique_ptr<ScaleDecider> scaler;
    std::vector<int> serving[3];  // serving instance ids by BatchRole
    int loading[3] = {0, 0, 0};   // starting or loading, by role
    std::deque<int> queued;       // no serving instance to prefill
    std::deque<int> pd_pending;   // prefilled, waiting for decode KV space
    int64_t arrived_prompt_tokens = 0;
  };
  struct Load {
    std::optional<core::blitz::LayeredMulticast> mc;
    std::string model;
    std::vector<int> hop_instance;
    // Per hop: where a root hop's layers come from (used again when it or its source dies).
    std::vector<core::blitz::Endpoint> hop_source;
    int remaining = 0;
  };

  LlmEngine(const LlmSimConfig& config, const LlmPolicyConfig& policy, EngineDeps deps);
  absl::Status Init();
  absl::Status InitFunction(int fn);
  absl::Status PlaceInitial();
  LlmRunResult Collect();

  // serving.cc
  void ScheduleArrival(int fn);
  int BurstCopies(int fn, absl::Time t);
  void OnArrival(int fn, const Arrival& a);
  void Route(int seq);
  int PickPrefill(int fn) const;
  int PickDecode(int fn, int64_t kv) const;
  void Kick(int inst);
  void OnIterationEnd(int inst);
  void StartKvTransfer(int seq);
  void OnKvLanded(int seq);
  void RetryPdPending(int fn);
  void OnFinished(int seq);

  // scaling.cc
  void OnSample();
  void Sample(absl::Time now);
  void Autoscale(int fn, absl::Time now);
  void ScaleRole(int fn, BatchRole role, int delta);
  std::optional<int> Place(int fn, BatchRole role);
  struct LoadTree {
    std::vector<core::blitz::HopSpec> hops;
    std::vector<int> hop_instance;  // instance receiving at each hop
    std::vector<core::blitz::Endpoint> hop_source;  // root hops: their source
  };
  LoadTree MulticastTree(int fn, const std::vector<int>& insts) const;
  std::vector<core::blitz::Endpoint> LiveSources(const std::string& model) const;
  std::vector<core::blitz::Endpoint> TargetEndpoints(const std::vector<int>& insts) const;
  void StartLoadOf(int fn, const std::vector<int>& placed);
  LoadTree LocalTree(int fn, const std::vector<int>& insts) const;
  void NewLoad(int fn, LoadTree tree);
  void BeginLoading(int load, int inst);
  // rounds.cc: a scale-out round that starts while an earlier round of the model still loads
  // joins that round's transfer (chained after its loading members, from unsaturated sources).
  bool JoinRound(int fn, const std::vector<int>& insts);
  std::vector<core::blitz::Endpoint> RoundSources(int load, std::vector<int>& member_hop) const;
  void OnLayer(int load, int hop);
  void MarkServing(int inst);
  void FinishLoad(int inst);
  absl::Duration LiveIterationTime(int inst, absl::Duration full);
  void PairLive(int fn, int target);
  void Drain(int fn, BatchRole role);
  void MaybeRelease(int inst);
  void Release(int inst);
  void Mutate(int fn, int n);
  void SetHeld(int delta);
  core::blitz::Endpoint EndpointOf(const Instance& in) const;

  // failure.cc
  void OnFailure(int index);
  void Kill(int inst);
  void RequeueTransfers(int inst);
  void Requeue(int seq);
  void FailLoadHop(int inst);
  void LoadMemberGone(int load);
  void RerouteDeadSources();
  bool EndpointDead(const core::blitz::Endpoint& e) const;
  core::blitz::Endpoint ReplacementSource(const std::string& model,
                                          const core::blitz::Endpoint& target) const;

  // network
  void AdvanceNet();
  void OnFlowDone(core::net::FlowId id);
  void ScheduleNet();
  void OnNet();

  static int RoleIndex(BatchRole r) { return static_cast<int>(r); }
  void AddServing(int inst);
  void RemoveServing(int inst);
  absl::Time now() const { return env_.Now(); }

  LlmSimConfig config_;
  LlmPolicyConfig policy_;
  EngineDeps deps_;
  common::SimEnv env_;
  absl::Time start_, end_;
  std::optional<core::net::Topology> topo_;
  std::unique_ptr<core::net::FlowNetwork> net_;
  std::unique_ptr<core::blitz::ParameterPool> pool_;
  std::vector<Function> fns_;
  std::vector<Seq> seqs_;
  std::vector<std::unique_ptr<Instance>> insts_;
  std::vector<uint64_t> free_mask_;  // per node: bit g set = GPU g free
  std::vector<uint64_t> dead_mask_;  // per node: bit g set = GPU g failed (never free again)
  uint64_t all_gpus_mask_ = 0;
  std::vector<Load> loads_;
  std::vector<int> active_loads_;
  std::vector<int> gpu_owner_;       // node * gpus_per_node + gpu -> instance, -1 free
  bool in_net_ = false, gpu_frozen_ = false;
  absl::flat_hash_map<core::net::FlowId, int> kv_flows_;  // flow -> sequence
  common::Env::TimerId net_timer_ = 0;
  absl::Time net_timer_at_ = absl::InfiniteFuture();
  // GPU time held.
  int held_gpus_ = 0, peak_gpus_ = 0;
  double gpu_seconds_ = 0;
  absl::Time held_since_;
  double host_cache_gib_sum_ = 0, host_cache_gib_peak_ = 0;
  int samples_ = 0;
  bool arrivals_open_ = true;
  int64_t max_kv_overflow_ = 0;
  std::vector<LlmTimelinePoint> timeline_;
  std::vector<double> prev_nic_bytes_;
  std::mt19937_64 burst_rng_;
  absl::flat_hash_set<std::string> registered_models_;
  // Live plans by (layers, batches, layers loaded, load time in quarter layers).
  using LivePlanKey = std::tuple<int, int, int, int>;
  absl::flat_hash_map<LivePlanKey, std::vector<int>> live_plans_;
};

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_ENGINE_H_
