// Pipeline functions (issue 11): validation of SimConfig::pipelines and of the stage functions,
// the chaining of each request from stage to stage with its activations crossing the network as
// a flow on a core::net::FlowNetwork (max-min shared), and the pipelines' results. Scaling by a
// PipelineScaler and CPU workers live in pipeline_scaling.cc.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "sim/engine/engine.h"

namespace sluice::sim {
namespace {

absl::Status PipeError(std::string_view file, size_t p, const PipelineConfig& pc,
                       absl::string_view field, absl::string_view msg) {
  return common::InputError({std::string(file), 0},
                            absl::StrCat("pipelines[", p, "] (", pc.name, ").", field), msg);
}

absl::Status StageError(std::string_view file, size_t i, const FunctionConfig& f,
                        absl::string_view field, absl::string_view msg) {
  return common::InputError({std::string(file), 0},
                            absl::StrCat("functions[", i, "] (", f.name, ").", field), msg);
}

double Gbps(core::Bandwidth b) {
  return b.bytes_per_second() * 8.0 / 1e9;
}

using NameIndex = absl::flat_hash_map<std::string, size_t>;

// Pipeline p's own fields, and that each stages[j] names a function that is its stage j.
absl::Status CheckPipeline(const SimConfig& c, size_t p, const NameIndex& fns,
                           std::string_view file) {
  const PipelineConfig& pc = c.pipelines[p];
  if (pc.stages.empty())
    return PipeError(file, p, pc, "stages", "must name at least one stage function");
  if (pc.slo <= absl::ZeroDuration())
    return PipeError(file, p, pc, "slo", "must be > 0");
  if (pc.slo_base < absl::ZeroDuration())
    return PipeError(file, p, pc, "slo_base", "must be >= 0");
  for (const double m : pc.slo_multipliers) {
    if (!(m > 0) || !std::isfinite(m))
      return PipeError(file, p, pc, "slo_multipliers", "each must be a finite number > 0");
  }
  for (size_t j = 0; j < pc.stages.size(); ++j) {
    const std::string field = absl::StrCat("stages[", j, "]");
    auto it = fns.find(pc.stages[j]);
    if (it == fns.end())
      return PipeError(file, p, pc, field, absl::StrCat("names no function '", pc.stages[j], "'"));
    const FunctionConfig& fc = c.functions[it->second];
    if (!fc.stage || fc.stage->pipeline != pc.name || fc.stage->index != static_cast<int>(j) ||
        fc.stage->count != static_cast<int>(pc.stages.size())) {
      return PipeError(file, p, pc, field,
                       absl::StrCat("function '", fc.name, "' must have stage {pipeline: ", pc.name,
                                    ", index: ", j, ", count: ", pc.stages.size(), "}"));
    }
  }
  return absl::OkStatus();
}

// Function i's stage section (when it has one).
absl::Status CheckStageEntry(const SimConfig& c, size_t i, const NameIndex& pipes,
                             std::string_view file) {
  const FunctionConfig& fc = c.functions[i];
  if (!fc.stage)
    return absl::OkStatus();
  const PipelineStageConfig& st = *fc.stage;
  if (!pipes.contains(st.pipeline)) {
    return StageError(file, i, fc, "stage.pipeline",
                      absl::StrCat("names no pipeline '", st.pipeline, "'"));
  }
  if (st.index < 0 || st.index >= st.count)
    return StageError(file, i, fc, "stage.index", "must be in [0, stage.count)");
  if (st.activation_out.count() < 0)
    return StageError(file, i, fc, "stage.activation_out", "must be >= 0");
  if (fc.training)
    return StageError(file, i, fc, "training", "a pipeline stage cannot be a training job");
  const core::PipelineCpuProfile& cpu = st.traits.cpu;
  if (!(cpu.cpu_slowdown >= 0) || !std::isfinite(cpu.cpu_slowdown))
    return StageError(file, i, fc, "stage.cpu_slowdown", "must be a finite number >= 0");
  if (cpu.cpu_slowdown > 0 && (cpu.cores_per_worker < 1 || cpu.max_workers < 0)) {
    return StageError(file, i, fc, "stage.cores_per_worker",
                      "must be >= 1 (and max_workers >= 0) when cpu_slowdown > 0");
  }
  return absl::OkStatus();
}

// SimConfig::network, when set, must be valid and cover the cluster.
absl::Status CheckNetwork(const SimConfig& c, std::string_view file) {
  if (!c.network)
    return absl::OkStatus();
  const std::string f(file);
  if (absl::Status s = core::net::ValidateNetSpec(*c.network); !s.ok())
    return common::InputError({f, 0}, "network", s.message());
  if (c.network->nodes != static_cast<int>(c.cluster.nodes.size())) {
    return common::InputError({f, 0}, "network.nodes",
                              absl::StrCat("is ", c.network->nodes, " but the cluster has ",
                                           c.cluster.nodes.size(), " nodes"));
  }
  for (const core::NodeSpec& n : c.cluster.nodes) {
    if (n.gpu_count > c.network->gpus_per_node) {
      return common::InputError({f, 0}, "network.gpus_per_node",
                                absl::StrCat("is ", c.network->gpus_per_node, " but node ", n.name,
                                             " has ", n.gpu_count, " GPUs"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Engine::CheckPipelines(std::string_view file) const {
  NameIndex fns, pipes;
  for (size_t i = 0; i < config_.functions.size(); ++i)
    fns.emplace(config_.functions[i].name, i);
  for (size_t p = 0; p < config_.pipelines.size(); ++p) {
    const PipelineConfig& pc = config_.pipelines[p];
    if (pc.name.empty())
      return PipeError(file, p, pc, "name", "must not be empty");
    if (!pipes.emplace(pc.name, p).second)
      return PipeError(file, p, pc, "name", "repeats an earlier pipeline's name");
    SLUICE_RETURN_IF_ERROR(CheckPipeline(config_, p, fns, file));
  }
  for (size_t i = 0; i < config_.functions.size(); ++i)
    SLUICE_RETURN_IF_ERROR(CheckStageEntry(config_, i, pipes, file));
  return CheckNetwork(config_, file);
}

// Only a pipeline's first stage takes arrivals from a workload (also a variant's override).
absl::Status Engine::CheckStage(size_t i, const WorkloadSpec& spec, std::string_view file) const {
  const FunctionConfig& fc = config_.functions[i];
  if (fc.stage && fc.stage->index > 0 && spec.kind != WorkloadKind::kNone) {
    return StageError(file, i, fc, "workload",
                      absl::StrCat("only a pipeline's first stage takes arrivals (stage.index is ",
                                   fc.stage->index, ")"));
  }
  return absl::OkStatus();
}

absl::Status Engine::InitPipelines(std::string_view file) {
  if (config_.pipelines.empty())
    return absl::OkStatus();
  absl::flat_hash_map<std::string, int> fn_index;
  for (size_t i = 0; i < config_.functions.size(); ++i)
    fn_index.emplace(config_.functions[i].name, static_cast<int>(i));
  pipes_.resize(config_.pipelines.size());
  for (size_t p = 0; p < pipes_.size(); ++p) {
    PipelineState& ps = pipes_[p];
    ps.config = &config_.pipelines[p];
    std::vector<core::FunctionTraits> traits;
    std::vector<core::PipelineStageTraits> stage_traits;
    for (const std::string& name : ps.config->stages)
      ps.stages.push_back(fn_index.at(name));
    for (size_t j = 0; j < ps.stages.size(); ++j) {
      Function& f = fns_[ps.stages[j]];
      f.stage = std::make_unique<StageState>();
      StageState& st = *f.stage;
      st.pipeline = static_cast<int>(p);
      st.index = static_cast<int>(j);
      st.next_fn = j + 1 < ps.stages.size() ? ps.stages[j + 1] : -1;
      for (TimeAverage* t :
           {&st.waiting, &st.gpu_replicas, &st.cpu_deployed, &st.servers, &st.busy}) {
        *t = TimeAverage(start_, horizon_);
      }
      traits.push_back(f.traits);
      stage_traits.push_back(f.config->stage->traits);
    }
    ps.scaler = policy_->MakePipelineScaler(traits, stage_traits, ps.config->slo);
    for (int fn : ps.stages)
      fns_[fn].pipeline_scaled = ps.scaler != nullptr;
  }
  return InitNetwork(file);
}

// SimConfig::network, or one derived from the cluster: one node per cluster node, as many GPUs
// per node as the largest node, host <-> GPU links at node 0's PCIe bandwidth, SSD at its
// storage bandwidth shared by its GPUs, and the ClusterNetSpec defaults otherwise (no NVLink,
// 256 Gbps PCIe GPU-GPU, one 100 Gbps RDMA NIC per GPU).
absl::Status Engine::InitNetwork(std::string_view file) {
  core::net::ClusterNetSpec spec;
  if (config_.network) {
    spec = *config_.network;
  } else {
    const core::NodeSpec& n0 = config_.cluster.nodes.front();
    spec.name = "derived";
    spec.nodes = static_cast<int>(config_.cluster.nodes.size());
    spec.gpus_per_node = 1;
    for (const core::NodeSpec& n : config_.cluster.nodes)
      spec.gpus_per_node = std::max(spec.gpus_per_node, n.gpu_count);
    spec.host_gpu_gbps = Gbps(n0.pcie_bandwidth);
    spec.ssd_gbps_per_gpu = Gbps(n0.storage_bandwidth) / std::max(1, n0.gpu_count);
    spec.host_memory_per_node = n0.host_memory;
  }
  auto topo = core::net::Topology::Build(spec);
  if (!topo.ok())
    return common::InputError({std::string(file), 0}, "network", topo.status().message());
  topology_.emplace(*std::move(topo));
  net_ = std::make_unique<core::net::FlowNetwork>(topology_->Capacities(), start_);
  gpu_loc_.assign(cluster_.gpu_count(), core::net::GpuLoc{});
  for (int n = 0; n < cluster_.node_count(); ++n) {
    int k = 0;
    for (core::GpuId g : cluster_.gpus_of(core::NodeId(n)))
      gpu_loc_[g.value()] = core::net::GpuLoc{n, k++};
  }
  return absl::OkStatus();
}

int32_t Engine::NewPipeRequest(absl::Time origin) {
  int32_t slot;
  if (!free_pipe_reqs_.empty()) {
    slot = free_pipe_reqs_.back();
    free_pipe_reqs_.pop_back();
  } else {
    slot = static_cast<int32_t>(pipe_reqs_.size());
    pipe_reqs_.emplace_back();
  }
  pipe_reqs_[slot] = PipeRequest{origin, origin, origin, -1, -1, Request{}};
  return slot;
}

void Engine::Waiting(int fn, double delta) {
  if (StageState* st = fns_[fn].stage.get(); st != nullptr)
    st->waiting.Add(env_.Now(), delta);
}

void Engine::OnStageArrival(int fn) {
  StageState& st = *fns_[fn].stage;
  st.gaps_run.OnArrival(env_.Now());
  st.gaps_window.OnArrival(env_.Now());
}

// The target was picked at dispatch; the request counts as outstanding there from now on.
void Engine::Deliver(Instance& inst, const Request& r) {
  if (r.pipe < 0 || pipe_reqs_[r.pipe].from < 0) {
    Enqueue(inst, r);
    return;
  }
  PipeRequest& pr = pipe_reqs_[r.pipe];
  const absl::Time now = env_.Now();
  const StageState& st = *fns_[inst.function()].stage;
  const int prev = pipes_[st.pipeline].stages[st.index - 1];
  const int64_t bytes = fns_[prev].config->stage->activation_out.count();
  const core::net::Path path = PathBetween(*instances_[pr.from], inst);
  pr.from = -1;
  if (bytes <= 0 || path.empty()) {  // same GPU / host, or nothing to send
    fns_[inst.function()].stage->transfer.Add(0);
    Enqueue(inst, r);
    return;
  }
  pr.sent = now;
  pr.to = static_cast<int32_t>(inst.id().value());
  pr.req = r;
  const int64_t old = inst.outstanding();
  if (old == 0)
    MarkBusy(inst);
  ++inst.inbound;
  if (inst.state() == InstanceState::kWarm)
    fns_[inst.function()].gateway.UpdateLoad(pr.to, old, old + 1);
  // Flows due exactly now keep their bandwidth for zero time; the timer completes them.
  flow_req_[net_->Start(now, path, bytes)] = r.pipe;
  ScheduleNet();
}

void Engine::ScheduleNet() {
  if (net_timer_ != 0)
    env_.Cancel(net_timer_);
  net_timer_ = 0;
  const absl::Time t = net_->NextCompletion();
  if (t == absl::InfiniteFuture())
    return;
  net_timer_ = env_.RunAt(std::max(t, env_.Now()), [this] {
    net_timer_ = 0;
    OnFlowsDone(net_->AdvanceTo(env_.Now()));
    // Rounding may leave a flow due now with a byte to go: retry a nanosecond later.
    if (net_timer_ == 0 && net_->NextCompletion() <= env_.Now()) {
      net_timer_ = env_.RunAfter(absl::Nanoseconds(1), [this] {
        net_timer_ = 0;
        OnFlowsDone(net_->AdvanceTo(env_.Now()));
        ScheduleNet();
      });
    } else {
      ScheduleNet();
    }
  });
}

void Engine::OnFlowsDone(const std::vector<core::net::FlowId>& done) {
  for (core::net::FlowId id : done) {
    auto it = flow_req_.find(id);
    SLUICE_CHECK(it != flow_req_.end());
    const int32_t slot = it->second;
    flow_req_.erase(it);
    ArriveAtStage(slot);
  }
}

// The activations arrived: the request joins the queue of the instance chosen at dispatch.
void Engine::ArriveAtStage(int32_t slot) {
  PipeRequest& pr = pipe_reqs_[slot];
  Instance& inst = *instances_[pr.to];
  const absl::Duration x = env_.Now() - pr.sent;
  Request r = pr.req;
  r.arrival += x;  // time held at the gateway counts at the stage; the transfer does not
  pr.to = -1;
  const int fn = inst.function();
  fns_[fn].stage->transfer.Add(absl::ToDoubleSeconds(x));
  --inst.inbound;
  inst.queue.push_back(r);  // outstanding unchanged: it counted while in transfer
  Waiting(fn, +1);
  MaybeStartBatch(inst);
}

// Sources and destinations: a GPU replica sends from its last GPU and receives on its first; a
// CPU worker sends and receives in its node's host memory.
core::net::Path Engine::PathBetween(const Instance& from, const Instance& to) const {
  const core::net::Topology& t = *topology_;
  if (!from.is_cpu() && !to.is_cpu())
    return t.GpuToGpu(gpu_loc_[from.gpus().back().value()], gpu_loc_[to.gpus().front().value()]);
  if (from.is_cpu() && !to.is_cpu())
    return t.HostToGpu(from.cpu_node, gpu_loc_[to.gpus().front().value()]);
  if (!from.is_cpu()) {  // GPU -> host
    const core::net::GpuLoc src = gpu_loc_[from.gpus().back().value()];
    if (src.node == to.cpu_node)
      return {t.HostGpuLink(src)};
    return {t.NicTxLink(src.node, t.NicOf(src)), t.NicRxLink(to.cpu_node, 0)};
  }
  if (from.cpu_node == to.cpu_node)
    return {};
  return {t.NicTxLink(from.cpu_node, 0), t.NicRxLink(to.cpu_node, 0)};
}

void Engine::StageDone(int fn, const Request& r, int32_t from) {
  StageState& st = *fns_[fn].stage;
  const absl::Time now = env_.Now();
  const double sojourn = absl::ToDoubleSeconds(now - r.arrival);
  st.sojourn_run.Add(sojourn);
  st.sojourn_window.Add(sojourn);
  if (r.pipe < 0)
    return;
  PipeRequest& pr = pipe_reqs_[r.pipe];
  if (st.next_fn < 0) {
    pipes_[st.pipeline].latency_ms.push_back(absl::ToDoubleMilliseconds(now - pr.origin));
    free_pipe_reqs_.push_back(r.pipe);
    return;
  }
  pr.handoff = now;
  pr.from = from;
  Function& next = fns_[st.next_fn];
  next.metrics.OnArrival();
  ++next.interval_arrivals;
  OnStageArrival(st.next_fn);
  Request nr = r;
  nr.arrival = now;
  Dispatch(st.next_fn, nr);
}

}  // namespace sluice::sim
