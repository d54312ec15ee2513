// Argument checks shared by every Store implementation, and the Unimplemented default of the
// cluster features. Thread-safe: stateless.
#include "runtime/store/store.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sluice::runtime {

absl::Status ClusterStore::Unimplemented(const char* what) {
  return absl::UnimplementedError(absl::StrCat("store: this backend does not implement ", what));
}

namespace internal {

absl::Status ValidateKey(const std::string& key) {
  if (key.empty())
    return absl::InvalidArgumentError("store: key must not be empty");
  return absl::OkStatus();
}

absl::Status VersionMismatch(const std::string& key, int64_t expected, int64_t actual) {
  return VersionMismatch("PutIf", key, expected, actual);
}

absl::Status VersionMismatch(const char* op, const std::string& key, int64_t expected,
                             int64_t actual) {
  return absl::FailedPreconditionError(absl::StrCat("store: ", op, " on key '",
                                                    absl::CHexEscape(key), "' expected version ",
                                                    expected, " but found ", actual,
                                                    actual == 0 ? " (absent)" : ""));
}

absl::Status ValidateTtl(absl::Duration ttl) {
  if (ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("store: lease ttl must be >= 1s, got ", absl::FormatDuration(ttl)));
  }
  return absl::OkStatus();
}

absl::Status LeaseNotFound(LeaseId lease) {
  return absl::NotFoundError(
      absl::StrCat("store: lease ", lease, " not found (expired, revoked or never granted)"));
}

absl::Status ValidatePutIfVersion(int64_t expected_version) {
  if (expected_version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("store: PutIf expected_version must be >= 0, got ", expected_version));
  }
  return absl::OkStatus();
}

absl::Status ValidateDeleteIfVersion(int64_t expected_version) {
  if (expected_version < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("store: DeleteIf expected_version must be >= 1, got ", expected_version));
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace sluice::runtime
