// TokenServer admission: hello validation (framing, major version, GPU), slot claim and slot
// initialisation, and live instance-spec updates.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/agent/token_server.h"

namespace sluice::runtime {
namespace {

uint32_t Ppm(double share) {
  return static_cast<uint32_t>(std::lround(std::clamp(share, 0.0, 1.0) * 1e6));
}

Admission Reject(uint32_t reason, const std::string& detail) {
  Admission a;
  a.reject = MakeReject(reason, detail);
  return a;
}

}  // namespace

SluiceReject MakeReject(uint32_t reason, const std::string& detail) {
  SluiceReject r;
  std::memset(&r, 0, sizeof(r));
  r.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_REJECT, sizeof(SluiceReject)};
  r.version_major = SLUICE_PROTO_MAJOR;
  r.version_minor = SLUICE_PROTO_MINOR;
  r.reason = reason;
  std::snprintf(r.detail, sizeof(r.detail), "%s", detail.c_str());
  return r;
}

uint32_t CheckHello(const SluiceHello& hello, std::string* detail) {
  if (hello.hdr.magic != SLUICE_MSG_MAGIC || hello.hdr.type != SLUICE_MSG_HELLO ||
      hello.hdr.bytes < sizeof(SluiceHello)) {
    *detail = "not a hello message";
    return SLUICE_REJECT_MALFORMED;
  }
  if (hello.version_major != SLUICE_PROTO_MAJOR) {
    *detail = absl::StrCat("token server speaks protocol ", SLUICE_PROTO_MAJOR, ".",
                           SLUICE_PROTO_MINOR, ", client ", hello.version_major, ".",
                           hello.version_minor);
    return SLUICE_REJECT_VERSION;
  }
  return 0;
}

Admission TokenServer::Admit(const PeerCred& peer, const SluiceHello& hello) {
  std::string detail;
  if (const uint32_t reason = CheckHello(hello, &detail); reason != 0) {
    return Reject(reason, detail);
  }
  const std::string uuid(hello.gpu_uuid, strnlen(hello.gpu_uuid, sizeof(hello.gpu_uuid)));
  if (uuid != config_.gpu_uuid) {
    return Reject(SLUICE_REJECT_UNKNOWN_GPU, absl::StrCat("no token server for GPU ", uuid));
  }
  absl::MutexLock lock(&mu_);
  uint32_t reason = 0;
  const int slot = ClaimSlot(peer, hello.requested_slot, &reason);
  if (slot < 0) {
    return Reject(reason, reason == SLUICE_REJECT_NO_SLOT
                              ? absl::StrCat("all ", segment_->slot_count(), " slots in use")
                              : absl::StrCat("slot ", hello.requested_slot, " unavailable"));
  }
  FillSlot(static_cast<uint32_t>(slot), peer, hello.instance_id);
  const uint16_t minor = std::min<uint16_t>(SLUICE_PROTO_MINOR, hello.version_minor);
  books_[static_cast<uint32_t>(slot)].minor = minor;
  Admission a;
  a.admitted = true;
  SluiceWelcome& w = a.welcome;
  w.hdr = {SLUICE_MSG_MAGIC, SLUICE_MSG_WELCOME, sizeof(SluiceWelcome)};
  w.version_major = SLUICE_PROTO_MAJOR;
  w.version_minor = minor;
  w.slot_index = static_cast<uint32_t>(slot);
  w.generation = Shared(segment_->slot(w.slot_index).generation).load();
  w.shm_bytes = segment_->bytes();
  std::snprintf(w.shm_name, sizeof(w.shm_name), "%s", segment_->name().c_str());
  return a;
}

int TokenServer::ClaimSlot(const PeerCred& peer, int32_t requested, uint32_t* reason) {
  if (requested >= 0) {
    if (static_cast<uint32_t>(requested) < segment_->slot_count()) {
      SluiceSlot& s = segment_->slot(static_cast<uint32_t>(requested));
      const uint32_t state = Shared(s.state).load();
      if (state == SLUICE_SLOT_FREE ||
          (state == SLUICE_SLOT_ACTIVE && static_cast<pid_t>(s.pid) == peer.pid)) {
        return requested;
      }
    }
    *reason = SLUICE_REJECT_SLOT_BUSY;
    return -1;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < segment_->slot_count(); ++i) {
      if (Shared(segment_->slot(i).state).load() == SLUICE_SLOT_FREE) return static_cast<int>(i);
    }
    if (pass == 0 && ReapLocked() == 0) break;  // a crashed client may still hold a slot
  }
  *reason = SLUICE_REJECT_NO_SLOT;
  return -1;
}

void TokenServer::FillSlot(uint32_t i, const PeerCred& peer, int64_t instance_id) {
  SluiceSlot& s = segment_->slot(i);
  const bool reattach = Shared(s.state).load() == SLUICE_SLOT_ACTIVE;
  if (!reattach) {
    for (int64_t* f : {&s.blocks_total, &s.kernels_total, &s.mem_used_bytes, &s.mem_peak_bytes,
                       &s.sync_points, &s.blocks_last_period, &s.kernels_last_period,
                       &s.tokens_issued, &s.klc_ns}) {
      Shared(*f).store(0, std::memory_order_relaxed);
    }
    books_[i] = SlotBook{};
  }
  s.pid = static_cast<uint32_t>(peer.pid);
  if (auto bound = pid_instances_.find(peer.pid); bound != pid_instances_.end()) {
    instance_id = bound->second;  // a pooled process handed an instance (BindPid)
  }
  s.instance_id = instance_id;
  s.registered_ns = absl::ToUnixNanos(env_.Now());
  const InstanceSpec& spec = SpecOf(instance_id);
  WriteSpec(s, spec);
  // Until the controller's first say, the instance may use its guaranteed share.
  const int64_t initial = static_cast<int64_t>(
      std::floor(static_cast<double>(config_.max_tokens) * spec.quota.request));
  Shared(s.budget).store(initial, std::memory_order_relaxed);
  Shared(s.tokens_issued).store(initial, std::memory_order_relaxed);
  Shared(s.budget_period)
      .store(Shared(segment_->header().period_seq).load(), std::memory_order_release);
  Shared(s.generation).fetch_add(1, std::memory_order_relaxed);
  Shared(s.state).store(SLUICE_SLOT_ACTIVE, std::memory_order_release);
}

void TokenServer::WriteSpec(SluiceSlot& s, const InstanceSpec& spec) {
  Shared(s.request_ppm).store(Ppm(spec.quota.request), std::memory_order_relaxed);
  Shared(s.limit_ppm).store(Ppm(spec.quota.limit), std::memory_order_relaxed);
  // At least 1 ppm: 0 means "no time quota" to 1.2 readers.
  Shared(s.time_quota_ppm).store(std::max<uint32_t>(1, Ppm(spec.quota.time_quota)),
                                 std::memory_order_relaxed);
  Shared(s.priority).store(spec.slo_sensitive ? SLUICE_PRIO_SLO : SLUICE_PRIO_BEST_EFFORT,
                           std::memory_order_relaxed);
  Shared(s.flags).store(spec.llm ? SLUICE_SLOT_FLAG_LLM : 0u, std::memory_order_relaxed);
  Shared(s.mem_limit_bytes).store(spec.mem_limit_bytes, std::memory_order_relaxed);
}

const InstanceSpec& TokenServer::SpecOf(int64_t instance_id) const {
  auto it = specs_.find(common::InstanceId(instance_id));
  return it == specs_.end() ? config_.default_spec : it->second;
}

std::optional<InstanceSpec> TokenServer::InstanceSpecOf(common::InstanceId instance) const {
  absl::MutexLock lock(&mu_);
  auto it = specs_.find(instance);
  if (it == specs_.end()) return std::nullopt;
  return it->second;
}

absl::Status TokenServer::SetInstanceSpec(common::InstanceId instance, const InstanceSpec& spec) {
  SLUICE_RETURN_IF_ERROR(core::ValidateQuota(spec.quota));
  if (spec.mem_limit_bytes < 0) return absl::InvalidArgumentError("mem_limit_bytes must be >= 0");
  absl::MutexLock lock(&mu_);
  specs_[instance] = spec;
  for (uint32_t i = 0; i < segment_->slot_count(); ++i) {
    SluiceSlot& s = segment_->slot(i);
    if (Shared(s.state).load() == SLUICE_SLOT_ACTIVE && s.instance_id == instance.value()) {
      WriteSpec(s, spec);
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice::runtime
