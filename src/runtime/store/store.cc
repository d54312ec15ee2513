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
  return absl::FailedPreconditionError(absl::StrCat("store: PutIf on key '", absl::CHexEscape(key),
                                                    "' expected version ", expected, " but found ",
                                                    actual, actual == 0 ? " (absent)" : ""));
}

}  // namespace internal
}  // namespace sluice::runtime
