// Status helpers shared by every module: propagation macros (Debian's Abseil 2022 has none),
// invariant checks, and the one way to report bad external input (file, line, field).
// Thread-safe: stateless.
#ifndef SLUICE_COMMON_STATUS_H_
#define SLUICE_COMMON_STATUS_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#define SLUICE_INTERNAL_CONCAT_(a, b) a##b
#define SLUICE_INTERNAL_CONCAT(a, b) SLUICE_INTERNAL_CONCAT_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define SLUICE_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::absl::Status sluice_status_ = (expr); \
    if (!sluice_status_.ok())               \
      return sluice_status_;                \
  } while (0)

#define SLUICE_INTERNAL_ASSIGN_OR_RETURN(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok())                                         \
    return tmp.status();                                 \
  lhs = std::move(*tmp)

// `lhs = *expr` if `expr` (an absl::StatusOr<T>) is OK, else returns its status.
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_INTERNAL_ASSIGN_OR_RETURN(SLUICE_INTERNAL_CONCAT(sluice_or_, __LINE__), lhs, expr)

// Invariant whose violation would corrupt state. Never used on external input.
#define SLUICE_CHECK(cond)                                                  \
  do {                                                                      \
    if (!(cond))                                                            \
      ::sluice::common::internal::CheckFail(#cond, __FILE__, __LINE__, ""); \
  } while (0)
#define SLUICE_CHECK_MSG(cond, msg)                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      ::sluice::common::internal::CheckFail(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)

namespace sluice::common {
namespace internal {
[[noreturn]] void CheckFail(const char* cond, const char* file, int line, absl::string_view msg);
}  // namespace internal

// Where a piece of external input came from. `line` is 1-based; 0 means "unknown".
struct InputLocation {
  std::string file;
  int line = 0;
};

// InvalidArgument naming file, line and field: "exp.yaml:12: field 'rate': must be >= 0".
[[nodiscard]] absl::Status InputError(const InputLocation& where, absl::string_view field,
                                      absl::string_view message);

}  // namespace sluice::common

#endif  // SLUICE_COMMON_STATUS_H_
