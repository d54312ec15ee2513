// The replay keeps the cluster as it stands after each event; fragmentation is measured once per
// distinct timestamp (the state that lasts until the next one) and at each new peak, so a replay
// costs O(events x (placement + active GPUs)).
#include "sim/placement/replay.h"

#include <algorithm>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/resource/fragmentation.h"

namespace sluice::sim {
namespace {

class Replayer {
 public:
  Replayer(const core::ClusterSpec& spec, core::PolicySet& policy, const ReplayOptions& options)
      : state_(spec), policy_(policy), options_(options), requested_(state_.gpu_count(), 0.0) {}

  absl::StatusOr<ReplayResult> Run(const std::vector<PlacementEvent>& events);

 private:
  struct Live {
    core::InstanceId id;
    double request = 0;  // profiled SM request per GPU
  };
  // Integrates the current state from `last_` to `t` and records it on the timeline.
  void AdvanceTo(absl::Time t);
  TimelinePoint Measure() const;
  absl::Status Apply(const PlacementEvent& e);
  absl::Status Start(const PlacementEvent& e);
  absl::Status Delete(const PlacementEvent& e);
  absl::Status CheckChoice(const PlacementEvent& e, const core::InstanceDemand& d,
                           const std::vector<core::GpuId>& gpus) const;
  absl::Status Commit(const PlacementEvent& e, const core::InstanceDemand& d,
                      const std::vector<core::GpuId>& gpus);
  core::FunctionId FunctionOf(const std::string& service);
  absl::Status Error(const PlacementEvent& e, absl::string_view message) const {
    return absl::InternalError(absl::StrCat("line ", e.line, ": ", e.instance.service_name, ": ",
                                            std::string(policy_.name()), ": ", message));
  }

  core::ClusterState state_;
  core::PolicySet& policy_;
  ReplayOptions options_;
  ReplayResult result_;
  absl::Time first_;
  absl::Time last_;
  double active_integral_ = 0;  // GPU-seconds
  double sm_integral_ = 0;
  double mem_integral_ = 0;
  double unrequested_integral_ = 0;
  int64_t next_instance_ = 0;
  absl::flat_hash_map<std::string, core::FunctionId> functions_;
  absl::flat_hash_map<std::string, Live> live_;
  std::vector<double> requested_;            // per GPU: sum of the profiled requests placed there
  absl::flat_hash_set<std::string> failed_;  // started but not placed, not yet deleted
};

absl::StatusOr<ReplayResult> Replayer::Run(const std::vector<PlacementEvent>& events) {
  if (events.empty())
    return result_;
  first_ = last_ = events.front().time;
  for (const PlacementEvent& e : events) {
    if (e.time < last_) {
      return common::InputError({"", e.line}, "Time", "events are not in time order");
    }
    if (e.time > last_)
      AdvanceTo(e.time);
    SLUICE_RETURN_IF_ERROR(Apply(e));
  }
  TimelinePoint final_point = Measure();
  final_point.at = last_ - first_;
  result_.final_active_gpus = final_point.active_gpus;
  result_.span = last_ - first_;
  const double span_s = absl::ToDoubleSeconds(result_.span);
  if (span_s > 0) {
    result_.mean_active_gpus = active_integral_ / span_s;
    result_.sm_fragmentation = sm_integral_ / span_s;
    result_.mem_fragmentation = mem_integral_ / span_s;
    result_.sm_unrequested = unrequested_integral_ / span_s;
  } else {
    result_.mean_active_gpus = final_point.active_gpus;
    result_.sm_fragmentation = final_point.sm_fragmentation;
    result_.mem_fragmentation = final_point.mem_fragmentation;
    result_.sm_unrequested = final_point.sm_unrequested;
  }
  if (options_.keep_timeline)
    result_.timeline.push_back(final_point);
  return std::move(result_);
}

TimelinePoint Replayer::Measure() const {
  const core::DiluFragmentation f = core::MeasureDilu(state_);
  TimelinePoint p{last_ - first_, f.active_gpus, f.sm(), f.memory(), 0.0};
  if (f.active_gpus > 0) {
    double sum = 0;
    for (core::GpuId g : state_.active_gpus())
      sum += 1.0 - std::min(1.0, requested_[g.value()]);
    p.sm_unrequested = sum / f.active_gpus;
  }
  return p;
}

void Replayer::AdvanceTo(absl::Time t) {
  const TimelinePoint p = Measure();
  const double dt = absl::ToDoubleSeconds(t - last_);
  active_integral_ += p.active_gpus * dt;
  sm_integral_ += p.sm_fragmentation * dt;
  mem_integral_ += p.mem_fragmentation * dt;
  unrequested_integral_ += p.sm_unrequested * dt;
  if (options_.keep_timeline)
    result_.timeline.push_back(p);
  last_ = t;
}

absl::Status Replayer::Apply(const PlacementEvent& e) {
  SLUICE_RETURN_IF_ERROR(e.action == InstanceAction::kStart ? Start(e) : Delete(e));
  const int active = static_cast<int>(state_.active_gpus().size());
  if (active > result_.peak_active_gpus) {
    const TimelinePoint p = Measure();
    result_.peak_active_gpus = active;
    result_.peak_at = e.time - first_;
    result_.sm_fragmentation_at_peak = p.sm_fragmentation;
    result_.mem_fragmentation_at_peak = p.mem_fragmentation;
    result_.sm_unrequested_at_peak = p.sm_unrequested;
  }
  return absl::OkStatus();
}

core::FunctionId Replayer::FunctionOf(const std::string& service) {
  auto [it, inserted] =
      functions_.try_emplace(service, core::FunctionId(static_cast<int64_t>(functions_.size())));
  return it->second;
}

absl::Status Replayer::Start(const PlacementEvent& e) {
  const InstanceSpec& s = e.instance;
  if (live_.contains(s.service_name) || failed_.contains(s.service_name)) {
    return common::InputError({"", e.line}, "Instance.service_name",
                              absl::StrCat("'", s.service_name, "' starts while still running"));
  }
  core::FunctionTraits traits;
  traits.id = FunctionOf(s.service_name);
  traits.kind = s.kind;
  traits.profiled = {s.sm_request, s.sm_limit};
  traits.slo_sensitive = s.kind != core::FunctionKind::kTraining;
  core::InstanceDemand d;
  d.function = traits.id;
  d.instance = core::InstanceId(next_instance_++);
  d.kind = s.kind;
  d.gpus = s.gpus;
  d.memory_per_gpu = core::Bytes::GiB(s.memory_gib);
  d.quota = policy_.QuotaFor(traits);
  d.same_node = s.kind == core::FunctionKind::kTraining;
  if (absl::Status q = core::ValidateQuota(d.quota); !q.ok())
    return Error(e, q.message());
  ++result_.starts;
  absl::StatusOr<std::vector<core::GpuId>> gpus = policy_.placement().Place(d, state_);
  if (absl::IsResourceExhausted(gpus.status())) {
    if (result_.failed_placements++ == 0) {
      result_.first_failure =
          absl::StrCat("line ", e.line, ": ", s.service_name, ": ", gpus.status().message());
    }
    failed_.insert(s.service_name);
    return absl::OkStatus();
  }
  if (!gpus.ok())
    return Error(e, gpus.status().ToString());
  SLUICE_RETURN_IF_ERROR(CheckChoice(e, d, *gpus));
  SLUICE_RETURN_IF_ERROR(Commit(e, d, *gpus));
  for (core::GpuId g : *gpus)
    requested_[g.value()] += s.sm_request;
  live_[s.service_name] = {d.instance, s.sm_request};
  return absl::OkStatus();
}

absl::Status Replayer::CheckChoice(const PlacementEvent& e, const core::InstanceDemand& d,
                                   const std::vector<core::GpuId>& gpus) const {
  if (static_cast<int>(gpus.size()) != d.gpus) {
    return Error(e, absl::StrCat("returned ", gpus.size(), " GPUs for a demand of ", d.gpus));
  }
  for (core::GpuId g : gpus) {
    if (!g.valid() || g.value() >= state_.gpu_count()) {
      return Error(e, absl::StrCat("returned unknown GPU ", g.value()));
    }
    if (d.same_node && state_.gpu(g).node != state_.gpu(gpus.front()).node) {
      return Error(e, "split a same-node training job across nodes");
    }
  }
  return absl::OkStatus();
}

absl::Status Replayer::Commit(const PlacementEvent& e, const core::InstanceDemand& d,
                              const std::vector<core::GpuId>& gpus) {
  for (core::GpuId g : gpus) {
    const core::Allocation a{d.instance, d.function, g, d.memory_per_gpu, d.quota};
    if (absl::Status s = state_.Add(a); !s.ok()) {
      for (const core::Allocation& r : state_.Remove(d.instance)) {
        policy_.placement().OnRemoved(r, state_);
      }
      return Error(e,
                   absl::StrCat("chose GPU ", g.value(), ", which cannot host it: ", s.message()));
    }
    policy_.placement().OnAdded(a, state_);
    const core::GpuState& gs = state_.gpu(g);
    result_.max_gpu_request_sum = std::max(result_.max_gpu_request_sum, gs.sum_request);
    result_.max_gpu_limit_sum = std::max(result_.max_gpu_limit_sum, gs.sum_limit);
  }
  return absl::OkStatus();
}

absl::Status Replayer::Delete(const PlacementEvent& e) {
  const std::string& name = e.instance.service_name;
  if (failed_.erase(name) > 0)
    return absl::OkStatus();  // never placed: nothing to release
  auto it = live_.find(name);
  if (it == live_.end()) {
    return common::InputError({"", e.line}, "Instance.service_name",
                              absl::StrCat("delete of '", name, "', which is not running"));
  }
  for (const core::Allocation& a : state_.Remove(it->second.id)) {
    requested_[a.gpu.value()] -= it->second.request;
    policy_.placement().OnRemoved(a, state_);
  }
  live_.erase(it);
  ++result_.deletes;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReplayResult> ReplayPlacement(const std::vector<PlacementEvent>& events,
                                             const core::ClusterSpec& cluster,
                                             core::PolicySet& policy,
                                             const ReplayOptions& options) {
  return Replayer(cluster, policy, options).Run(events);
}

}  // namespace sluice::sim
