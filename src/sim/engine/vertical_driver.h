// Drives the policy's per-GPU VerticalControllers in the simulator. A GPU is ticked every
// controller period only while it hosts >= 2 unparked instances and had work in the last period,
// so idle GPUs cost nothing and virtual time can jump. Parked residents (memory-only idle,
// core::IsParked quota) take no part, as in the node's token server (runtime/agent
// token_server.h, SetParked): no say in the split, no tokens, and the controller drops their
// history (it sees them no more; an un-parked one starts afresh). Each tick reports every
// unparked resident's activity (blocks launched = share-seconds used in the period / period x
// max_tokens; cycles completed = the instance's batches or training iterations that ended in the
// period) and turns the issued tokens into share caps (tokens / max_tokens) in the
// GpuShareModel; a parked resident's cap is its quota.limit. When ticking stops, caps return to
// each instance's quota.limit. An optional share log hears of material cap changes
// (>= kMaterialCapChange of the GPU) and controller state changes (the event log's `share` lines).
// Not thread-safe.
#ifndef SLUICE_SIM_ENGINE_VERTICAL_DRIVER_H_
#define SLUICE_SIM_ENGINE_VERTICAL_DRIVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "common/env.h"
#include "core/policy/vertical.h"
#include "core/registry/policy_registry.h"
#include "core/resource/cluster.h"
#include "sim/engine/gpu_share.h"

namespace sluice::sim {

// Kernel thread blocks one SM executes in one controller period: the token unit. A GPU's
// max_tokens = sm_count x kBlocksPerSmPerPeriod (108,000 for an A100's 108 SMs). Only ratios
// tokens / max_tokens matter to the fluid model; the constant sets the controller's resolution.
inline constexpr int64_t kBlocksPerSmPerPeriod = 1000;
// A cap change of at least this fraction of the GPU is reported to the share log.
inline constexpr double kMaterialCapChange = 0.05;

// Receives `instance`'s new cap on `gpu` (a fraction of the GPU) and the GPU controller's state
// ("EMERGENCY", "RECOVERY", "CONTENTION" or "NONE"; "NONE" for controllers without states).
using ShareLog =
    std::function<void(int32_t instance, core::GpuId gpu, double cap, std::string_view state)>;

class VerticalDriver {
 public:
  // All references must outlive the driver.
  VerticalDriver(common::Env& env, core::PolicySet& policy, GpuShareModel& shares,
                 const core::ClusterState& cluster);

  // What the controller is told about an instance (call before it first runs).
  void Register(int32_t instance, bool slo_sensitive, bool llm);
  // Reports cap changes from now on: at a tick, every resident whose cap moved by >=
  // kMaterialCapChange since its last report (the first is against quota.limit), or all residents
  // when the controller's state differs from the last reported one; when ticking stops, residents
  // whose cap returning to quota.limit is material. Null = no reports.
  void SetShareLog(ShareLog log) { share_log_ = std::move(log); }
  // An instance on `gpu` started work: begins ticking if the GPU now qualifies.
  void OnWorkStarted(core::GpuId gpu);
  // A work item of `instance` (an inference batch or a training iteration) ended: one
  // iteration boundary, reported as InstanceActivity::cycles_completed at the next tick.
  void OnIterationDone(int32_t instance) { ++cycles_[instance]; }
  // `instance` left `gpu` (already detached from the share model).
  void OnDetached(core::GpuId gpu, int32_t instance);
  int64_t ticks() const { return ticks_; }

 private:
  struct GpuTicker {
    std::unique_ptr<core::VerticalController> controller;
    bool ticking = false;
    bool static_shares = false;  // controller period is infinite: never tick
    std::vector<std::pair<int32_t, int64_t>> seen;  // resident -> cycles_ at the last tick
    std::string_view logged_state = "NONE";         // last state reported to share_log_
  };
  // Ends since the last tick of `instance`, the k-th resident.
  int64_t TakeCycles(GpuTicker& t, size_t k, int32_t instance);
  void Tick(core::GpuId gpu);
  // Fills activity_ with the unparked residents' activity in the period just ended (active_:
  // their indices in `residents`); true if any of them worked or is busy.
  bool Observe(core::GpuId gpu, GpuTicker& t, std::span<const int32_t> residents,
               int64_t max_tokens);
  void StopTicking(core::GpuId gpu);
  // Reports residents' new caps (`caps` in residents order) to share_log_ per SetShareLog.
  void ReportCaps(core::GpuId gpu, GpuTicker& t, std::span<const double> caps,
                  std::string_view state);

  common::Env& env_;
  core::PolicySet& policy_;
  GpuShareModel& shares_;
  const core::ClusterState& cluster_;
  std::vector<GpuTicker> gpus_;
  std::vector<uint8_t> flags_;  // per instance: bit 0 slo_sensitive, bit 1 llm
  std::vector<int64_t> cycles_;  // per instance: iterations ended so far
  std::vector<double> logged_cap_;  // per instance: last reported cap; < 0 = none yet
  ShareLog share_log_;
  int64_t ticks_ = 0;
  std::vector<core::InstanceActivity> activity_;  // scratch
  std::vector<size_t> active_;  // scratch: activity_[j] is residents[active_[j]]
  std::vector<int64_t> tokens_;
  std::vector<double> caps_;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_VERTICAL_DRIVER_H_
