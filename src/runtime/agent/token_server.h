// TokenServer: the per-GPU token server of the node agent (one per GPU UUID). Every period
// (5 ms by default, >= 1 ms) it reads each registered instance's kernel-block and (protocol 1.1)
// synchronisation-point counters from the GPU's shared-memory segment, runs the core
// VerticalController (the same class the simulator runs) and writes the next period's budgets,
// stamped with the period, then wakes throttled clients (FUTEX_WAKE) and refreshes the heartbeat.
// Registration (hello -> welcome | reject) comes from RegistrationServer or tests; a client's
// slot is retired on socket EOF or when its pid disappears, releasing its memory charge.
// Time quotas (HAS-GPU's q, protocol 1.2; design in docs/time-based-tokens.md): the controller
// sizes each budget from the SM share s alone; the server then grants at most q x W periods of
// that rate in each scheduling window of W periods (TimeSliceGrant), charging the slice with
// the blocks the instance actually ran, so q = 1 leaves every budget exactly as the controller
// issued it.
// Thread safety: the period runs on the Env's loop; Admit/Retire/SetInstanceSpec/Slots may be
// called from any thread. `mu_` guards the bookkeeping; the segment's fields are atomics shared
// with client processes (protocol.h gives each field's writer and ordering).
#ifndef SLUICE_RUNTIME_AGENT_TOKEN_SERVER_H_
#define SLUICE_RUNTIME_AGENT_TOKEN_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "core/policy/vertical.h"
#include "intercept/protocol.h"
#include "runtime/agent/gpu_segment.h"

namespace sluice::runtime {

// What the node agent decided for one instance on this GPU.
struct InstanceSpec {
  core::SmQuota quota{1.0, 1.0};  // request/limit: SM share s; time_quota: HAS-GPU's q
  bool slo_sensitive = true;  // SLUICE_PRIO_SLO; false = best effort
  bool llm = false;
  int64_t mem_limit_bytes = 0;  // 0 = no limit from the server
};

struct TokenServerConfig {
  std::string gpu_uuid;
  absl::Duration period = absl::Milliseconds(5);  // [1 ms, 1 s]
  int64_t max_tokens = 0;  // kernel blocks the whole GPU runs in one period; > 0
  uint32_t slot_count = 16;
  std::string shm_name;  // default SLUICE_SHM_PREFIX + gpu_uuid
  mode_t shm_mode = 0600;
  SluiceFailPolicy fail_policy = SLUICE_FAIL_OPEN;
  absl::Duration fail_timeout = absl::Milliseconds(100);
  InstanceSpec default_spec;  // for hellos naming an instance the server was not told about
  int reap_every_periods = 20;  // cadence of the kill(pid, 0) check for vanished clients
  // The time-quota scheduling window W, in periods ([1, 1000]): an instance with time quota q
  // runs kernels for at most q x W periods' worth of its SM-share budget per window. 1 (the
  // default) spreads the slice evenly: q of the share budget every period.
  int time_window_periods = 1;
};

// One period's grant under a time quota. `share_tokens`: the controller's budget at the SM
// share; `slice_used`: periods of that rate the instance already ran in the current window.
// Returns share_tokens x clamp(q x W - slice_used, 0, 1), rounded to the nearest token;
// exactly share_tokens when time_quota >= 1. Pure.
int64_t TimeSliceGrant(int64_t share_tokens, double time_quota, int window_periods,
                       double slice_used);

// The kernel's view of a connected client (SO_PEERCRED), never the message's claims.
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Outcome of a hello: a welcome to send, or a reject with its reason.
struct Admission {
  bool admitted = false;
  SluiceWelcome welcome{};
  SluiceReject reject{};
};

// A read-only snapshot of one slot, for tools and tests.
struct SlotView {
  uint32_t index = 0;
  uint32_t state = SLUICE_SLOT_FREE;
  uint32_t generation = 0;
  pid_t pid = 0;
  common::InstanceId instance;
  core::SmQuota quota;
  bool slo_sensitive = true;
  int64_t blocks_last_period = 0;
  int64_t tokens_issued = 0;  // after the time quota
  int64_t share_tokens = 0;   // the controller's grant at the SM share, before the time quota
  int64_t budget = 0;
  int64_t klc_ns = 0;
  int64_t mem_used_bytes = 0;
};

class TokenServer {
 public:
  static absl::StatusOr<std::unique_ptr<TokenServer>> Create(
      common::Env& env, const TokenServerConfig& config,
      std::unique_ptr<core::VerticalController> controller);
  // Stops the period timer and unlinks the segment. Call Stop() first when the Env runs on
  // another thread, so no period is in flight.
  ~TokenServer();

  // Schedules the first period; each period schedules the next on a fixed grid.
  void Start();
  // Cancels the next period. Thread-safe; a period already running completes.
  void Stop();

  // Handles a hello from `peer`: version and GPU checks, then claims a slot (requested_slot >= 0
  // re-attaches a slot the same pid holds) and fills it from the instance's spec.
  Admission Admit(const PeerCred& peer, const SluiceHello& hello);
  // Retires a slot (its client hung up). Ignored when `generation` is no longer the slot's.
  void Retire(uint32_t slot, uint32_t generation);
  // Sets the spec of `instance` for future hellos and rewrites the live slots of that instance;
  // the controller sees it from the next period. InvalidArgument for a bad quota.
  absl::Status SetInstanceSpec(common::InstanceId instance, const InstanceSpec& spec);
  // The spec set for `instance`, or nullopt when none was (hellos then get the default spec).
  std::optional<InstanceSpec> InstanceSpecOf(common::InstanceId instance) const;
  // Retires every slot whose client process is gone; returns how many. Runs periodically too.
  int ReapDeadClients();

  const std::string& gpu_uuid() const { return config_.gpu_uuid; }
  const GpuSegment& segment() const { return *segment_; }
  std::vector<SlotView> Slots() const;
  uint64_t periods_run() const;
  // The vertical controller's GPU-wide state now (Dilu: NONE, EMERGENCY, RECOVERY, CONTENTION),
  // reported as the GPU's `share_state` for the controller's dashboard.
  std::string share_state() const;

 private:
  struct SlotBook {  // server-private state of one slot
    int64_t last_blocks = 0;
    int64_t last_kernels = 0;
    int64_t last_sync_points = 0;
    uint16_t minor = 0;   // negotiated protocol minor; >= 1 publishes sync_points
    int run_periods = 0;  // consecutive non-empty periods (the current kernel-launch cycle)
    int64_t share_granted = 0;  // controller tokens issued for the period now running
    int64_t granted = 0;        // tokens issued for it after the time quota
    double slice_used = 0;      // periods of share rate run in the current time window
  };

  TokenServer(common::Env& env, const TokenServerConfig& config,
              std::unique_ptr<core::VerticalController> controller,
              std::unique_ptr<GpuSegment> segment);
  void RunPeriod() ABSL_LOCKS_EXCLUDED(mu_);
  void ScheduleNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Refill(int64_t seq, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies slot `i`'s time quota to the controller's `share_tokens` and stores the budget.
  void Grant(uint32_t i, int64_t share_tokens, int64_t seq, bool new_window)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads ACTIVE slot `i`'s counters, publishes its line-3 statistics and returns what the
  // controller sees of it this period (cycles_completed = sync_points delta, -1 for 1.0 clients).
  core::InstanceActivity ReadActivity(uint32_t i, int64_t period_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WakeWaiters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int ClaimSlot(const PeerCred& peer, int32_t requested, uint32_t* reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FillSlot(uint32_t i, const PeerCred& peer, int64_t instance_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteSpec(SluiceSlot& s, const InstanceSpec& spec) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RetireLocked(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The identity the controller knows slot `i`'s instance by.
  common::InstanceId ControllerId(uint32_t i) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const InstanceSpec& SpecOf(int64_t instance_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  common::Env& env_;
  const TokenServerConfig config_;
  const std::unique_ptr<GpuSegment> segment_;
  mutable absl::Mutex mu_;
  std::unique_ptr<core::VerticalController> controller_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<common::InstanceId, InstanceSpec> specs_ ABSL_GUARDED_BY(mu_);
  std::vector<SlotBook> books_ ABSL_GUARDED_BY(mu_);
  std::vector<core::InstanceActivity> activity_ ABSL_GUARDED_BY(mu_);  // reused each period
  std::vector<int64_t> tokens_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> active_ ABSL_GUARDED_BY(mu_);
  absl::Time grid_start_ ABSL_GUARDED_BY(mu_);
  uint64_t periods_run_ ABSL_GUARDED_BY(mu_) = 0;
  common::Env::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
};

// A reject message with the server's version, `reason` (SluiceRejectReason) and `detail`.
SluiceReject MakeReject(uint32_t reason, const std::string& detail);
// Checks a hello's framing and major version: 0 when acceptable, else the reject reason (with
// a human-readable `detail`).
uint32_t CheckHello(const SluiceHello& hello, std::string* detail);

// Validates a config (period range, tokens, slots, uuid) and returns InvalidArgument naming the
// field.
[[nodiscard]] absl::Status ValidateTokenServerConfig(const TokenServerConfig& config);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_TOKEN_SERVER_H_
