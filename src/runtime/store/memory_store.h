// MemoryStore: an in-memory Store, the fake that tests of the controller and later components use.
// Same contract and version rules as SqliteStore; nothing persists. Thread-safe (one absl::Mutex).
#ifndef SLUICE_RUNTIME_STORE_MEMORY_STORE_H_
#define SLUICE_RUNTIME_STORE_MEMORY_STORE_H_

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "runtime/store/store.h"

namespace sluice::runtime {

class MemoryStore final : public Store {
 public:
  MemoryStore() = default;

  [[nodiscard]] absl::Status Put(std::string key, std::string value) override;
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  absl::StatusOr<std::optional<VersionedValue>> GetVersioned(const std::string& key) override;
  [[nodiscard]] absl::Status Delete(const std::string& key) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> List(
      const std::string& prefix) override;
  absl::StatusOr<int64_t> PutIf(std::string key, int64_t expected_version,
                                std::string value) override;

 private:
  absl::Mutex mu_;
  std::map<std::string, VersionedValue> kv_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_MEMORY_STORE_H_
