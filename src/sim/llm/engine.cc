// The LLM engine's construction, initial pools, the network event and result collection.
#include "sim/llm/engine.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::sim::llm {

LlmEngine::LlmEngine(const LlmSimConfig& config, const LlmPolicyConfig& policy, EngineDeps deps)
    : config_(config), policy_(policy), deps_(std::move(deps)) {}

LlmEngine::~LlmEngine() = default;

absl::StatusOr<std::unique_ptr<LlmEngine>> LlmEngine::Create(const LlmSimConfig& config,
                                                             const LlmPolicyConfig& policy,
                                                             EngineDeps deps) {
  if (deps.models.size() != config.functions.size()) {
    return absl::InvalidArgumentError("llm engine: one perf model per function is required");
  }
  if (config.sample_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.source_file, ": sample_interval must be > 0"));
  }
  std::unique_ptr<LlmEngine> e(new LlmEngine(config, policy, std::move(deps)));
  SLUICE_RETURN_IF_ERROR(e->Init());
  return e;
}

absl::Status LlmEngine::Init() {
  start_ = env_.Now();
  burst_rng_.seed(DeriveSeed(config_.seed, 0xB0B5));
  for (const BurstConfig& b : config_.bursts) {
    const bool known =
        std::any_of(config_.functions.begin(), config_.functions.end(),
                    [&b](const LlmFunctionConfig& f) { return f.name == b.function; });
    if (!known || b.factor < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          config_.source_file, ": bursts: ", known ? "factor must be >= 1" : "unknown function ",
          known ? "" : b.function));
    }
  }
  end_ = start_ + config_.duration;
  held_since_ = start_;
  SLUICE_ASSIGN_OR_RETURN(core::net::Topology topo, core::net::Topology::Build(config_.cluster));
  topo_.emplace(std::move(topo));
  net_ = std::make_unique<core::net::FlowNetwork>(topo_->Capacities(), start_);
  prev_nic_bytes_.assign(topo_->num_links(), 0);
  core::blitz::PoolConfig pool;
  pool.policy = policy_.set.host_cache;
  pool.nodes = config_.cluster.nodes;
  pool.host_cache_per_node = config_.cluster.host_memory_per_node;
  pool_ = std::make_unique<core::blitz::ParameterPool>(pool);
  if (config_.cluster.gpus_per_node > 64) {
    return absl::InvalidArgumentError("cluster: gpus_per_node must be <= 64");
  }
  const uint64_t all = config_.cluster.gpus_per_node == 64
                           ? ~uint64_t{0}
                           : (uint64_t{1} << config_.cluster.gpus_per_node) - 1;
  all_gpus_mask_ = all;
  free_mask_.assign(config_.cluster.nodes, all);
  dead_mask_.assign(config_.cluster.nodes, 0);
  for (size_t i = 0; i < config_.failures.size(); ++i) {
    const FailureConfig& fc = config_.failures[i];
    const std::string field = absl::StrCat(config_.source_file, ": failures[", i, "]");
    if (fc.node < 0 || fc.node >= config_.cluster.nodes) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".node: must be in [0, ",
                                                     config_.cluster.nodes, ")"));
    }
    if (fc.gpu < -1 || fc.gpu >= config_.cluster.gpus_per_node) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".gpu: must be -1 (the node) or in [0, ", config_.cluster.gpus_per_node, ")"));
    }
    if (fc.at < absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".at_s: must be >= 0"));
    }
    env_.RunAt(start_ + fc.at, [this, i] { OnFailure(static_cast<int>(i)); });
  }
  gpu_owner_.assign(static_cast<size_t>(config_.cluster.nodes) * config_.cluster.gpus_per_node, -1);
  fns_.resize(config_.functions.size());
  for (int fn = 0; fn < static_cast<int>(fns_.size()); ++fn) {
    SLUICE_RETURN_IF_ERROR(InitFunction(fn));
  }
  SLUICE_RETURN_IF_ERROR(PlaceInitial());
  for (int fn = 0; fn < static_cast<int>(fns_.size()); ++fn) ScheduleArrival(fn);
  env_.RunAt(start_ + config_.sample_interval, [this] { OnSample(); });
  return absl::OkStatus();
}

absl::Status LlmEngine::InitFunction(int fn) {
  Function& f = fns_[fn];
  f.config = config_.functions[fn];
  f.model = deps_.models[fn];
  const core::LlmModelSpec& spec = f.model->spec();
  f.tp = spec.tp;
  f.kv_capacity = spec.KvCapacityTokens();
  const std::string where = absl::StrCat(config_.source_file, ": function ", f.config.name);
  if (f.kv_capacity <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": model ", spec.name,
                                                   " leaves no KV-cache memory at tp ", f.tp));
  }
  if (f.tp > config_.cluster.gpus_per_node) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tp ", f.tp, " exceeds gpus_per_node"));
  }
  if (f.config.max_batch_tokens <= 0 || f.config.max_decode_batch <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": max_batch_tokens and max_decode_batch must be > 0"));
  }
  if (deps_.make_source) f.source = deps_.make_source(fn);
  if (f.source == nullptr) {
    SLUICE_ASSIGN_OR_RETURN(f.source,
                            MakeArrivalSource(f.config.workload, DeriveSeed(config_.seed, fn),
                                              start_, config_.duration));
  }
  if (deps_.make_scaler) f.scaler = deps_.make_scaler(fn, policy_.set.scaler);
  if (!registered_models_.insert(spec.name).second) return absl::OkStatus();  // shared model
  return pool_->AddModel(spec.name, spec.param_bytes, start_);
}

// Autoscaled policies start from each function's initial pools; fixed policies (DistServe) give
// every function an equal share of fixed_gpu_fraction of the GPUs, split P:D as the initial
// counts are.
absl::Status LlmEngine::PlaceInitial() {
  const int total = config_.cluster.nodes * config_.cluster.gpus_per_node;
  for (int fn = 0; fn < static_cast<int>(fns_.size()); ++fn) {
    Function& f = fns_[fn];
    int p = std::max(1, f.config.initial_prefill);
    int d = f.config.disaggregated ? std::max(1, f.config.initial_decode) : 0;
    if (!policy_.set.autoscale) {
      const int n = std::max(f.config.disaggregated ? 2 : 1,
                             static_cast<int>(total * policy_.set.fixed_gpu_fraction /
                                              static_cast<double>(fns_.size()) / f.tp));
      if (f.config.disaggregated) {
        const int p_new = std::max(1, n * p / (p + d));
        d = std::max(1, n - p_new);
        p = p_new;
      } else {
        p = n;
      }
    }
    const BatchRole prole = f.config.disaggregated ? BatchRole::kPrefill : BatchRole::kColocated;
    for (int i = 0; i < p + d; ++i) {
      const std::optional<int> inst = Place(fn, i < p ? prole : BatchRole::kDecode);
      if (!inst.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            config_.source_file, ": function ", f.config.name,
            ": initial instances do not fit the cluster's free GPUs"));
      }
      --f.loading[RoleIndex(insts_[*inst]->role)];
      insts_[*inst]->load_start = now();
      MarkServing(*inst);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LlmRunResult> LlmEngine::Run() {
  env_.RunUntil(end_);
  arrivals_open_ = false;
  SetHeld(0);  // closes the GPU-time integral at the horizon
  gpu_frozen_ = true;
  env_.RunUntil(end_ + config_.drain_timeout);
  return Collect();
}

void LlmEngine::SetHeld(int delta) {
  if (!gpu_frozen_) {
    const absl::Time t = std::min(now(), end_);
    gpu_seconds_ += held_gpus_ * absl::ToDoubleSeconds(t - held_since_);
    held_since_ = t;
  }
  held_gpus_ += delta;
  peak_gpus_ = std::max(peak_gpus_, held_gpus_);
}

void LlmEngine::AdvanceNet() {
  if (in_net_) return;
  in_net_ = true;
  const std::vector<core::net::FlowId> done = net_->AdvanceTo(now());
  for (const core::net::FlowId id : done) OnFlowDone(id);
  in_net_ = false;
  // Completions start flows (the next layer of a hop, new KV transfers): re-arm the timer.
  ScheduleNet();
}

void LlmEngine::OnFlowDone(core::net::FlowId id) {
  if (auto it = kv_flows_.find(id); it != kv_flows_.end()) {
    const int seq = it->second;
    kv_flows_.erase(it);
    if (--seqs_[seq].pending_flows == 0) OnKvLanded(seq);
    return;
  }
  for (size_t k = 0; k < active_loads_.size(); ++k) {
    const int l = active_loads_[k];
    std::optional<core::blitz::LayeredMulticast::Delivery> d =
        loads_[l].mc->OnFlowDone(*net_, id, now());
    if (d.has_value()) {
      OnLayer(l, d->hop);
      return;
    }
  }
}

void LlmEngine::ScheduleNet() {
  const absl::Time t = net_->NextCompletion();
  if (t == net_timer_at_) return;
  if (net_timer_ != 0) env_.Cancel(net_timer_);
  net_timer_ = 0;
  net_timer_at_ = t;
  if (t == absl::InfiniteFuture()) return;
  net_timer_ = env_.RunAt(std::max(t, now()), [this] {
    net_timer_ = 0;
    net_timer_at_ = absl::InfiniteFuture();
    AdvanceNet();
    ScheduleNet();
  });
}

void LlmEngine::AddServing(int inst) {
  Instance& in = *insts_[inst];
  fns_[in.fn].serving[RoleIndex(in.role)].push_back(inst);
}

void LlmEngine::RemoveServing(int inst) {
  Instance& in = *insts_[inst];
  std::vector<int>& v = fns_[in.fn].serving[RoleIndex(in.role)];
  v.erase(std::remove(v.begin(), v.end(), inst), v.end());
}

LlmRunResult LlmEngine::Collect() {
  LlmRunResult r;
  r.policy = policy_.label.empty() ? policy_.set.name : policy_.label;
  for (Function& f : fns_) {
    LlmFunctionResult fr;
    FunctionStats& s = f.stats;
    fr.name = f.config.name;
    fr.requests = s.requests;
    fr.completed = s.completed;
    fr.rejected = s.rejected;
    fr.ttft_p50_ms = s.ttft.Percentile(0.5);
    fr.ttft_p99_ms = s.ttft.Percentile(0.99);
    fr.ttft_mean_ms = s.ttft.Mean();
    fr.tbt_p50_ms = s.tbt.Percentile(0.5);
    fr.tbt_p99_ms = s.tbt.Percentile(0.99);
    fr.tbt_mean_ms = s.tbt.Mean();
    fr.slo_attainment =
        s.completed == 0 ? 0 : static_cast<double>(s.slo_met) / static_cast<double>(s.completed);
    fr.scale_outs = s.scale_outs;
    fr.scale_ins = s.scale_ins;
    fr.mutations = s.mutations;
    fr.live_scales = s.live_scales;
    fr.preemptions = s.preemptions;
    fr.mean_load_s = s.loads == 0 ? 0 : s.load_s_sum / static_cast<double>(s.loads);
    fr.instance_failures = s.instance_failures;
    fr.requeued = s.requeued;
    r.functions.push_back(std::move(fr));
  }
  r.gpu_seconds = gpu_seconds_;
  const double dur = absl::ToDoubleSeconds(config_.duration);
  r.mean_gpus = dur > 0 ? gpu_seconds_ / dur : 0;
  r.peak_gpus = peak_gpus_;
  r.host_cache_gib_mean = samples_ == 0 ? 0 : host_cache_gib_sum_ / samples_;
  r.host_cache_gib_peak = host_cache_gib_peak_;
  r.events = static_cast<int64_t>(env_.events_run());
  r.timeline = std::move(timeline_);
  return r;
}

}  // namespace sluice::sim::llm
