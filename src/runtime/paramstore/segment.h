// ParamSegment: one model's parameters in host memory as a memfd (anonymous shared memory with
// file seals), mapped writable while it fills and, once sealed, read-only. Used by ParamStore (the
// node's parameter store), the chain receiver (fills it from the network) and instance processes
// (map the fd they received over the agent's Unix socket).
// Thread safety: the fill (data() writes) belongs to one owner at a time; after Seal() every
// accessor may be called from any thread.
#ifndef SLUICE_RUNTIME_PARAMSTORE_SEGMENT_H_
#define SLUICE_RUNTIME_PARAMSTORE_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace sluice::runtime {

class ParamSegment {
 public:
  // A zero-filled memfd of `bytes` (> 0) named "sluice-params:<name>" (the name shows in
  // /proc/<pid>/fd, nowhere else), mapped writable (not yet populated: see Prepare). ResourceExhausted when the
  // kernel refuses the memory.
  static absl::StatusOr<std::unique_ptr<ParamSegment>> Create(const std::string& name,
                                                              int64_t bytes);
  // Maps a sealed segment received from another process (SCM_RIGHTS) read-only.
  // InvalidArgument when `fd` is not a sealed memfd of the expected size (`bytes` < 0: any size).
  // Takes ownership of `fd` (closed on failure too).
  static absl::StatusOr<std::unique_ptr<ParamSegment>> MapReadOnly(int fd, int64_t bytes);
  ~ParamSegment();
  ParamSegment(const ParamSegment&) = delete;
  ParamSegment& operator=(const ParamSegment&) = delete;

  // Drops the writable mapping, seals the memfd against writes, growth and shrinking (so a
  // reader can never observe a change), and maps it read-only. Idempotent.
  [[nodiscard]] absl::Status Seal();

  bool sealed() const { return sealed_; }
  int fd() const { return fd_; }
  int64_t size() const { return size_; }
  // Faults in [offset, offset + bytes) for writing (MADV_POPULATE_WRITE) right before it is
  // filled, so the kernel's page zeroing is still in cache when the data lands; a no-op where
  // the kernel lacks it (the fill then faults page by page). Before Seal() only.
  void Prepare(int64_t offset, int64_t bytes);
  // Writable before Seal(), nullptr after.
  char* mutable_data() { return sealed_ ? nullptr : data_; }
  const char* data() const { return data_; }

 private:
  ParamSegment(int fd, int64_t size, char* data, bool sealed)
      : fd_(fd), size_(size), data_(data), sealed_(sealed) {}
  int fd_;
  int64_t size_;
  char* data_;
  bool sealed_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_SEGMENT_H_
