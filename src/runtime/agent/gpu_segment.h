// GpuSegment: the token server's side of one GPU's shared-memory segment (layout and ordering
// rules in src/intercept/protocol.h and docs/intercept-protocol.md). Creates and sizes it,
// publishes the header, and gives typed atomic access to header and slot fields. Used only by
// TokenServer. Thread safety: the fields are atomics shared with client processes; the object
// itself is immutable after Create.
#ifndef SLUICE_RUNTIME_AGENT_GPU_SEGMENT_H_
#define SLUICE_RUNTIME_AGENT_GPU_SEGMENT_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "intercept/protocol.h"

namespace sluice::runtime {

// Relaxed/acquire/release access to a plain field of the shared segment (the protocol fixes
// the layout as plain C integers; every access goes through std::atomic_ref).
template <typename T>
std::atomic_ref<T> Shared(T& field) {
  return std::atomic_ref<T>(field);
}

struct SegmentOptions {
  std::string gpu_uuid;
  std::string shm_name;  // "/sluice-gpu-<uuid>" when empty
  uint32_t slot_count = 16;
  mode_t mode = 0600;
  SluiceFailPolicy fail_policy = SLUICE_FAIL_OPEN;
  int64_t period_ns = 5000000;
  int64_t max_tokens = 0;
  int64_t fail_timeout_ns = 100000000;
  int64_t time_window_ns = 5000000;  // 1.2: the time-quota window, a multiple of period_ns
};

class GpuSegment {
 public:
  // Creates the segment. An existing segment whose server is still alive is an error
  // (AlreadyExists); a stale one (its server pid is gone) is unlinked and replaced.
  static absl::StatusOr<std::unique_ptr<GpuSegment>> Create(const SegmentOptions& options);
  // Unmaps and unlinks the segment. Clients that still map it see the heartbeat stop.
  ~GpuSegment();
  GpuSegment(const GpuSegment&) = delete;
  GpuSegment& operator=(const GpuSegment&) = delete;

  SluiceShmHeader& header() const { return *header_; }
  SluiceSlot& slot(uint32_t i) const { return SluiceShmSlots(header_)[i]; }
  uint32_t slot_count() const { return header_->slot_count; }
  const std::string& name() const { return name_; }
  size_t bytes() const { return bytes_; }

 private:
  GpuSegment(SluiceShmHeader* header, std::string name, size_t bytes)
      : header_(header), name_(std::move(name)), bytes_(bytes) {}

  SluiceShmHeader* header_;
  std::string name_;
  size_t bytes_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_GPU_SEGMENT_H_
