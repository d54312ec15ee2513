// Out-of-line pieces of status.h.
#include "common/status.h"

#include "absl/strings/str_cat.h"

namespace sluice::common {
namespace internal {

void CheckFail(const char* cond, const char* file, int line, absl::string_view msg) {
  std::fprintf(stderr, "SLUICE_CHECK failed at %s:%d: %s %.*s\n", file, line, cond,
               static_cast<int>(msg.size()), msg.data());
  std::abort();
}

}  // namespace internal

absl::Status InputError(const InputLocation& where, absl::string_view field,
                        absl::string_view message) {
  std::string prefix = where.file.empty() ? "<input>" : where.file;
  if (where.line > 0) {
    absl::StrAppend(&prefix, ":", where.line);
  }
  if (field.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, ": ", message));
  }
  return absl::InvalidArgumentError(absl::StrCat(prefix, ": field '", field, "': ", message));
}

}  // namespace sluice::common
