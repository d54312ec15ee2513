// ParamReader: strict parsing of a policy's `key: value` params (PolicyParam) for registry
// factories. Every getter names the file, the param's line and its key in its error; Finish()
// rejects keys nobody asked for and keys given twice. Used by core/registry and by modules that
// register policies (core/dilu, ...). Not thread-safe; one reader per parse.
#ifndef SLUICE_CORE_REGISTRY_PARAM_READER_H_
#define SLUICE_CORE_REGISTRY_PARAM_READER_H_

#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "core/policy/policy_params.h"

namespace sluice::core {

class ParamReader {
 public:
  // `policy` names the policy in messages; `file` is where the params came from.
  ParamReader(absl::string_view policy, std::span<const PolicyParam> params, std::string file);

  // A finite number in [min, max] (absl::SimpleAtod, whole value); `fallback` when absent.
  absl::StatusOr<double> Double(absl::string_view key, double fallback, double min, double max);
  // An integer in [min, max]; `fallback` when absent.
  absl::StatusOr<int64_t> Int(absl::string_view key, int64_t fallback, int64_t min, int64_t max);
  // A number of seconds in [min_s, max_s], as a Duration; `fallback` when absent.
  absl::StatusOr<absl::Duration> Seconds(absl::string_view key, absl::Duration fallback,
                                         double min_s, double max_s);
  // "true" / "false"; `fallback` when absent.
  absl::StatusOr<bool> Bool(absl::string_view key, bool fallback);
  // One of `allowed`; `fallback` when absent.
  absl::StatusOr<std::string> Choice(absl::string_view key, absl::string_view fallback,
                                     std::initializer_list<absl::string_view> allowed);

  // InvalidArgument for the first key given twice or never asked for (in file order), listing
  // the keys this policy knows. Call after all getters.
  [[nodiscard]] absl::Status Finish() const;

 private:
  // The param with `key` (and remembers that `key` is known); nullptr when absent.
  const PolicyParam* Find(absl::string_view key);
  absl::Status Error(const PolicyParam& p, absl::string_view message) const;

  std::string policy_;
  std::span<const PolicyParam> params_;
  std::string file_;
  std::vector<std::string> known_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_PARAM_READER_H_
