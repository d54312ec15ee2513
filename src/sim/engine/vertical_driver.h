// Drives the policy's per-GPU VerticalControllers in the simulator. A GPU is ticked every
// controller period only while it hosts >= 2 instances and had work in the last period, so idle
// GPUs cost nothing and virtual time can jump. Each tick reports every resident's activity
// (blocks launched = share-seconds used in the period / period x max_tokens; cycles completed =
// the instance's batches or training iterations that ended in the period) and turns the
// issued tokens into share caps (tokens / max_tokens) in the GpuShareModel. When ticking stops,
// caps return to each instance's quota.limit. Not thread-safe.
#ifndef SLUICE_SIM_ENGINE_VERTICAL_DRIVER_H_
#define SLUICE_SIM_ENGINE_VERTICAL_DRIVER_H_

#include <cstdint>
#include <memory>
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

class VerticalDriver {
 public:
  // All references must outlive the driver.
  VerticalDriver(common::Env& env, core::PolicySet& policy, GpuShareModel& shares,
                 const core::ClusterState& cluster);

  // What the controller is told about an instance (call before it first runs).
  void Register(int32_t instance, bool slo_sensitive, bool llm);
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
  };
  int64_t TakeCycles(GpuTicker& t, int32_t instance);  // ends since the last tick
  void Tick(core::GpuId gpu);
  void StopTicking(core::GpuId gpu);

  common::Env& env_;
  core::PolicySet& policy_;
  GpuShareModel& shares_;
  const core::ClusterState& cluster_;
  std::vector<GpuTicker> gpus_;
  std::vector<uint8_t> flags_;  // per instance: bit 0 slo_sensitive, bit 1 llm
  std::vector<int64_t> cycles_;  // per instance: iterations ended so far
  int64_t ticks_ = 0;
  std::vector<core::InstanceActivity> activity_;  // scratch
  std::vector<int64_t> tokens_;
  std::vector<double> caps_;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_VERTICAL_DRIVER_H_
