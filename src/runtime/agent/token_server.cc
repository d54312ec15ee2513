// TokenServer: creation, the period (counters -> controller -> budgets -> wake), retirement and
// snapshots. Admission lives in token_server_admit.cc.
#include "runtime/agent/token_server.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace sluice::runtime {
namespace {

// The slot's time quota q in (0, 1]; 0 (never written) reads as 1.
double TimeQuotaOf(SluiceSlot& s) {
  const uint32_t ppm = Shared(s.time_quota_ppm).load(std::memory_order_relaxed);
  return ppm == 0 || ppm >= 1000000 ? 1.0 : ppm / 1e6;
}

}  // namespace

int64_t TimeSliceGrant(int64_t share_tokens, double time_quota, int window_periods,
                       double slice_used) {
  if (time_quota >= 1.0 || share_tokens <= 0) return std::max<int64_t>(0, share_tokens);
  const double left = std::clamp(time_quota * window_periods - slice_used, 0.0, 1.0);
  return std::llround(static_cast<double>(share_tokens) * left);
}

absl::Status ValidateTokenServerConfig(const TokenServerConfig& c) {
  if (c.gpu_uuid.empty() || c.gpu_uuid.size() >= SLUICE_UUID_BYTES) {
    return absl::InvalidArgumentError("token server: gpu_uuid must be 1-63 characters");
  }
  if (c.period < absl::Milliseconds(1) || c.period > absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token server: period must be in [1ms, 1s], got ", absl::FormatDuration(c.period)));
  }
  if (c.max_tokens <= 0) return absl::InvalidArgumentError("token server: max_tokens must be > 0");
  if (c.slot_count == 0 || c.slot_count > SLUICE_MAX_SLOTS) {
    return absl::InvalidArgumentError(
        absl::StrCat("token server: slot_count must be in [1, ", SLUICE_MAX_SLOTS, "]"));
  }
  if (c.fail_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("token server: fail_timeout must be > 0");
  }
  if (c.reap_every_periods <= 0) {
    return absl::InvalidArgumentError("token server: reap_every_periods must be > 0");
  }
  if (c.time_window_periods < 1 || c.time_window_periods > 1000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "token server: time_window_periods must be in [1, 1000], got ", c.time_window_periods));
  }
  return core::ValidateQuota(c.default_spec.quota);
}

absl::StatusOr<std::unique_ptr<TokenServer>> TokenServer::Create(
    common::Env& env, const TokenServerConfig& config,
    std::unique_ptr<core::VerticalController> controller) {
  SLUICE_RETURN_IF_ERROR(ValidateTokenServerConfig(config));
  if (controller == nullptr) return absl::InvalidArgumentError("token server: no controller");
  SegmentOptions so;
  so.gpu_uuid = config.gpu_uuid;
  so.shm_name = config.shm_name;
  so.slot_count = config.slot_count;
  so.mode = config.shm_mode;
  so.fail_policy = config.fail_policy;
  so.period_ns = absl::ToInt64Nanoseconds(config.period);
  so.max_tokens = config.max_tokens;
  so.fail_timeout_ns = absl::ToInt64Nanoseconds(config.fail_timeout);
  so.time_window_ns = so.period_ns * config.time_window_periods;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<GpuSegment> segment, GpuSegment::Create(so));
  return std::unique_ptr<TokenServer>(
      new TokenServer(env, config, std::move(controller), std::move(segment)));
}

TokenServer::TokenServer(common::Env& env, const TokenServerConfig& config,
                         std::unique_ptr<core::VerticalController> controller,
                         std::unique_ptr<GpuSegment> segment)
    : env_(env), config_(config), segment_(std::move(segment)),
      controller_(std::move(controller)), books_(config.slot_count) {}

TokenServer::~TokenServer() { Stop(); }

void TokenServer::Start() {
  absl::MutexLock lock(&mu_);
  if (running_) return;
  running_ = true;
  grid_start_ = env_.Now();
  timer_ = env_.RunAt(grid_start_ + config_.period, [this] { RunPeriod(); });
}

void TokenServer::Stop() {
  absl::MutexLock lock(&mu_);
  running_ = false;
  if (timer_ != 0) env_.Cancel(timer_);
  timer_ = 0;
}

void TokenServer::ScheduleNext() {
  // Periods sit on a fixed grid; a late period does not shift the ones after it, and periods
  // missed entirely (the loop stalled) are skipped rather than run back to back.
  const absl::Time now = env_.Now();
  const int64_t k = (now - grid_start_) / config_.period + 1;
  timer_ = env_.RunAt(grid_start_ + k * config_.period, [this] { RunPeriod(); });
}

void TokenServer::RunPeriod() {
  absl::MutexLock lock(&mu_);
  if (!running_) return;
  const absl::Time now = env_.Now();
  SluiceShmHeader& h = segment_->header();
  const uint64_t seq = Shared(h.period_seq).load(std::memory_order_acquire);
  Refill(static_cast<int64_t>(seq), now);
  Shared(h.period_seq).store(seq + 1, std::memory_order_release);
  Shared(h.heartbeat_ns).store(absl::ToUnixNanos(now), std::memory_order_release);
  WakeWaiters();
  ++periods_run_;
  if (periods_run_ % static_cast<uint64_t>(config_.reap_every_periods) == 0) ReapLocked();
  ScheduleNext();
}

core::InstanceActivity TokenServer::ReadActivity(uint32_t i, int64_t period_ns) {
  SluiceSlot& s = segment_->slot(i);
  SlotBook& b = books_[i];
  const int64_t blocks = Shared(s.blocks_total).load(std::memory_order_relaxed);
  const int64_t kernels = Shared(s.kernels_total).load(std::memory_order_relaxed);
  const int64_t delta = std::max<int64_t>(0, blocks - b.last_blocks);
  Shared(s.blocks_last_period).store(delta, std::memory_order_relaxed);
  Shared(s.kernels_last_period).store(std::max<int64_t>(0, kernels - b.last_kernels));
  b.last_blocks = blocks;
  b.last_kernels = kernels;
  if (delta > 0) {
    ++b.run_periods;
  } else if (b.run_periods > 0) {  // a kernel-launch cycle just ended
    Shared(s.klc_ns).store(b.run_periods * period_ns, std::memory_order_relaxed);
    b.run_periods = 0;
  }
  if (b.share_granted > 0) {  // the time slice is charged with work run against grants
    b.slice_used += static_cast<double>(std::min(delta, b.granted)) /
                    static_cast<double>(b.share_granted);
  }
  const uint32_t req = Shared(s.request_ppm).load(std::memory_order_relaxed);
  const uint32_t lim = Shared(s.limit_ppm).load(std::memory_order_relaxed);
  core::InstanceActivity a;
  a.instance = ControllerId(i);
  // The controller sizes tokens from s; the time quota is applied after it (Grant), and passed
  // here only so a controller can see it.
  a.quota = core::SmQuota{req / 1e6, lim / 1e6, TimeQuotaOf(s)};
  a.slo_sensitive = Shared(s.priority).load(std::memory_order_relaxed) == SLUICE_PRIO_SLO;
  a.llm = (Shared(s.flags).load(std::memory_order_relaxed) & SLUICE_SLOT_FLAG_LLM) != 0;
  a.blocks_launched = delta;
  if (b.minor >= SLUICE_PROTO_MINOR_SYNC_POINTS) {  // a 1.0 client never writes sync_points
    const int64_t syncs = Shared(s.sync_points).load(std::memory_order_relaxed);
    a.cycles_completed = std::max<int64_t>(0, syncs - b.last_sync_points);
    b.last_sync_points = syncs;
  }
  return a;
}

void TokenServer::Refill(int64_t seq, absl::Time now) {
  activity_.clear();
  active_.clear();
  const int64_t period_ns = absl::ToInt64Nanoseconds(config_.period);
  for (uint32_t i = 0; i < segment_->slot_count(); ++i) {
    if (Shared(segment_->slot(i).state).load(std::memory_order_acquire) != SLUICE_SLOT_ACTIVE) {
      continue;
    }
    activity_.push_back(ReadActivity(i, period_ns));
    active_.push_back(i);
  }
  tokens_.assign(activity_.size(), 0);
  if (!activity_.empty()) controller_->Issue(now, config_.max_tokens, activity_, tokens_);
  // Period seq + 1 opens a new time window every W periods (the grid is the server's).
  const bool new_window = (seq + 1) % config_.time_window_periods == 0;
  for (size_t k = 0; k < active_.size(); ++k) {
    Grant(active_[k], std::max<int64_t>(0, tokens_[k]), seq, new_window);
  }
}

void TokenServer::Grant(uint32_t i, int64_t share_tokens, int64_t seq, bool new_window) {
  SluiceSlot& s = segment_->slot(i);
  SlotBook& b = books_[i];
  if (new_window) b.slice_used = 0;
  const int64_t tokens = TimeSliceGrant(share_tokens, TimeQuotaOf(s),
                                        config_.time_window_periods, b.slice_used);
  b.share_granted = share_tokens;
  b.granted = tokens;
  // A debt left by an overdrawing launch carries over; unused tokens do not (no hoarding).
  auto budget = Shared(s.budget);
  int64_t old = budget.load(std::memory_order_relaxed);
  while (!budget.compare_exchange_weak(old, tokens + std::min<int64_t>(old, 0),
                                       std::memory_order_relaxed)) {
  }
  Shared(s.tokens_issued).store(tokens, std::memory_order_relaxed);
  Shared(s.share_tokens).store(share_tokens, std::memory_order_relaxed);
  Shared(s.budget_period).store(static_cast<uint64_t>(seq + 1), std::memory_order_release);
}

void TokenServer::WakeWaiters() {
  for (uint32_t i : active_) {
    SluiceSlot& s = segment_->slot(i);
    Shared(s.futex_word).fetch_add(1, std::memory_order_seq_cst);
    if (Shared(s.waiters).load(std::memory_order_seq_cst) > 0) {
      // A shared futex (no FUTEX_PRIVATE_FLAG): the waiters are other processes.
      syscall(SYS_futex, &s.futex_word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
    }
  }
}

common::InstanceId TokenServer::ControllerId(uint32_t i) const {
  // Clients without an instance id (-1) still need distinct controller identities.
  constexpr int64_t kAnonymousBase = int64_t{1} << 60;
  const SluiceSlot& s = segment_->slot(i);
  if (s.instance_id >= 0) return common::InstanceId(s.instance_id);
  return common::InstanceId(kAnonymousBase + int64_t{s.generation} * SLUICE_MAX_SLOTS + i);
}

void TokenServer::Retire(uint32_t slot, uint32_t generation) {
  absl::MutexLock lock(&mu_);
  if (slot >= segment_->slot_count()) return;
  SluiceSlot& s = segment_->slot(slot);
  if (Shared(s.state).load() != SLUICE_SLOT_ACTIVE || Shared(s.generation).load() != generation) {
    return;  // already retired, or the slot was claimed again since
  }
  RetireLocked(slot);
}

void TokenServer::RetireLocked(uint32_t i) {
  SluiceSlot& s = segment_->slot(i);
  Shared(s.state).store(SLUICE_SLOT_RETIRING, std::memory_order_release);
  controller_->Forget(ControllerId(i));
  // Release the instance's tokens, counters and memory charge; the process (if any) is gone or
  // has hung up, so whatever it allocated on the device is freed with it.
  for (int64_t* f : {&s.budget, &s.blocks_total, &s.kernels_total, &s.mem_used_bytes,
                     &s.mem_peak_bytes, &s.sync_points, &s.blocks_last_period,
                     &s.kernels_last_period, &s.tokens_issued, &s.klc_ns, &s.share_tokens}) {
    Shared(*f).store(0, std::memory_order_relaxed);
  }
  s.pid = 0;
  books_[i] = SlotBook{};
  Shared(s.futex_word).fetch_add(1, std::memory_order_seq_cst);
  if (Shared(s.waiters).load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, &s.futex_word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
  Shared(s.state).store(SLUICE_SLOT_FREE, std::memory_order_release);
}

int TokenServer::ReapDeadClients() {
  absl::MutexLock lock(&mu_);
  return ReapLocked();
}

int TokenServer::ReapLocked() {
  int reaped = 0;
  for (uint32_t i = 0; i < segment_->slot_count(); ++i) {
    const pid_t pid = static_cast<pid_t>(segment_->slot(i).pid);
    if (Shared(segment_->slot(i).state).load() != SLUICE_SLOT_ACTIVE || pid <= 0) continue;
    if (kill(pid, 0) != 0 && errno == ESRCH) {
      RetireLocked(i);
      ++reaped;
    }
  }
  return reaped;
}

std::vector<SlotView> TokenServer::Slots() const {
  absl::MutexLock lock(&mu_);
  std::vector<SlotView> out;
  for (uint32_t i = 0; i < segment_->slot_count(); ++i) {
    SluiceSlot& s = segment_->slot(i);
    SlotView v;
    v.index = i;
    v.state = Shared(s.state).load(std::memory_order_acquire);
    v.generation = Shared(s.generation).load();
    v.pid = static_cast<pid_t>(s.pid);
    v.instance = common::InstanceId(s.instance_id);
    v.quota = {Shared(s.request_ppm).load() / 1e6, Shared(s.limit_ppm).load() / 1e6,
               TimeQuotaOf(s)};
    v.slo_sensitive = Shared(s.priority).load() == SLUICE_PRIO_SLO;
    v.blocks_last_period = Shared(s.blocks_last_period).load();
    v.tokens_issued = Shared(s.tokens_issued).load();
    v.share_tokens = Shared(s.share_tokens).load();
    v.budget = Shared(s.budget).load();
    v.klc_ns = Shared(s.klc_ns).load();
    v.mem_used_bytes = Shared(s.mem_used_bytes).load();
    out.push_back(v);
  }
  return out;
}

uint64_t TokenServer::periods_run() const {
  absl::MutexLock lock(&mu_);
  return periods_run_;
}

std::string TokenServer::share_state() const {
  absl::MutexLock lock(&mu_);
  return std::string(controller_->state_name());
}

}  // namespace sluice::runtime
